package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/plan"
)

// TestPrintPlanSaysWhyRejected: a setting rejected at a seed and one
// rejected by the prediction bound alone are printed with their own
// reasons, and with nothing left the output says that nothing meets the
// limit.
func TestPrintPlanSaysWhyRejected(t *testing.T) {
	atSeed := plan.Row{Legend: "grad_dp σ=1", StrongestLeak: 0.14, Bound: 0.19, Seeds: plan.SeedFigures{N: 3, Leak: 0.18, LeakBound: 0.23, LeakPred: 0.276, Verdict: plan.Rejected}}
	byPred := plan.Row{Legend: "grad_avg k=5", StrongestLeak: 0.36, Seeds: plan.SeedFigures{N: 3, Leak: 0.37, LeakPred: 0.4144, Verdict: plan.Rejected, ByPrediction: true}}
	res := &plan.Result{Recommended: -1, Pending: -1, ConfirmSeeds: 2, Rejected: []plan.Row{atSeed, byPred}, Closest: []plan.Row{byPred}}
	var b bytes.Buffer
	printPlan(&b, plan.Options{Threat: plan.Threat{MaxLeak: 0.4}}, res)
	out := b.String()
	for _, want := range []string{
		"rejected: grad_dp σ=1 — within the limit with the plan's seed, not with every seed: strongest leak 0.1400 (95% upper bound 0.1900), then up to 0.1800 (bound up to 0.2300) over 3 seeds",
		"rejected: grad_avg k=5 — within the limit with the plan's seed, with every seed, but a further seed's leak may not be: 95% prediction bound 0.4144",
		"nothing meets the limit on every seed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
