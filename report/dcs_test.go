package report

import (
	"math"
	"testing"
)

// sumRun is a run with only what the DCS ranking reads.
func sumRun(method, param string, value, auc, normQ, cosQ, stepMS, eps float64) *Run {
	f := func(v float64) *float64 { return &v }
	// The top of the test curve is higher than the model kept: the ranking
	// must not read it.
	s := &Summary{TestAUCSelected: f(auc), TestAUCBest: f(auc + 0.05), Leak: map[string]LeakStat{"norm/cut": {Q95Abs: f(normQ)}},
		Raw: map[string]any{"step_ms_mean": stepMS}}
	if !math.IsNaN(cosQ) {
		s.Leak["cosine/cut"] = LeakStat{Q95Abs: f(cosQ)}
	}
	if !math.IsNaN(eps) {
		s.Raw["privacy"] = map[string]any{"grad_dp_eps": eps}
	}
	return &Run{Setting: Setting{Dataset: "d", Method: method, Param: param, Value: value}, Summary: s, Status: "done"}
}

func TestDCSRankingHandCase(t *testing.T) {
	nan := math.NaN()
	runs := []*Run{
		sumRun("none", "", nan, 0.80, 0.40, 0.30, 10, nan),
		sumRun("iso", "t=1", 1, 0.78, 0.20, 0.10, 11, nan),
		sumRun("iso", "t=1", 1, 0.74, 0.10, 0.10, 11, nan),
		sumRun("grad_dp", "σ=2, C=1", 2, 0.70, 0.05, 0.05, 12, 3.5),
		sumRun("sparsify", "p=0.5", 0.5, 0.79, 0.35, nan, 10, nan), // cosine not audited
	}
	keys := []string{"cosine/cut", "norm/cut"}
	scores, mpIdeal, note := dcsScores(groups(runs), "d", keys)
	if mpIdeal != 0.80 || note != "" {
		t.Fatalf("MP* = %v (%q), want 0.80 from the run without protection", mpIdeal, note)
	}
	// By hand, with AP = 2·q95|AUC − ½| and β = ½:
	//   none:     AP 0.8 / 0.6, MP = MP*: D = √(½·0.64), √(½·0.36)
	//   iso:      MP 0.76, AP norm 2·0.15 = 0.3, cosine 0.2
	//   grad_dp:  AP 0.1 both, MP 0.70: D = √(½·0.01 + ½·0.01) = 0.1
	//   sparsify: norm only, AP 0.7, MP 0.79
	d := func(ap, mp float64) float64 { return 1 / (1 + math.Sqrt(0.5*ap*ap+0.5*(mp-0.8)*(mp-0.8))) }
	// The ranking is by the DCS against the strongest attack (the largest
	// AP): none's is norm at 0.8, below sparsify's norm at 0.7, although
	// none's T-DCS is the higher.
	want := []struct {
		method string
		tdcs   float64
		sdcs   float64
		strong string
		step   float64
	}{
		{"grad_dp", 1 / 1.1, 1 / 1.1, "cosine/cut", 1.2},
		{"iso", (d(0.3, 0.76) + d(0.2, 0.76)) / 2, d(0.3, 0.76), "norm/cut", 1.1},
		{"sparsify", d(0.7, 0.79), d(0.7, 0.79), "norm/cut", 1},
		{"none", (1/(1+0.4*math.Sqrt2) + 1/(1+0.3*math.Sqrt2)) / 2, 1 / (1 + 0.4*math.Sqrt2), "norm/cut", 1},
	}
	if len(scores) != len(want) {
		t.Fatalf("%d settings, want %d", len(scores), len(want))
	}
	for i, w := range want {
		s := scores[i]
		if s.g.Setting.Method != w.method || math.Abs(s.tdcs-w.tdcs) > 1e-12 || math.Abs(s.stepMS-w.step) > 1e-12 ||
			math.Abs(s.sdcs-w.sdcs) > 1e-12 || s.strongKey != w.strong || s.tdcsDefault != s.tdcs {
			t.Errorf("rank %d: %s T-DCS %v (default %v), vs strongest %v (%s), step ×%v; want %s %v, %v (%s), ×%v", i+1, s.g.Setting.Method,
				s.tdcs, s.tdcsDefault, s.sdcs, s.strongKey, s.stepMS, w.method, w.tdcs, w.sdcs, w.strong, w.step)
		}
	}
	if scores[0].eps != 3.5 || !math.IsNaN(scores[1].eps) {
		t.Errorf("ε column: %v, %v", scores[0].eps, scores[1].eps)
	}
	tab, notes := dcsTable(groups(runs), keys)
	if len(tab.Rows) != 4 || tab.Rows[0][2].Text != "grad_dp" || tab.Rows[0][5].Text != "0.9091" || len(notes) != 0 {
		t.Errorf("table first row %v, notes %v", tab.Rows[0], notes)
	}

	// Without a run without protection MP* is the best test AUC, and the
	// page says so.
	_, mpIdeal, note = dcsScores(groups(runs[1:]), "d", keys)
	if mpIdeal != 0.79 || note == "" {
		t.Errorf("without none: MP* = %v, note %q; want 0.79 and a note", mpIdeal, note)
	}
}

// TestMainAUC: the kept model's AUC is the selected one, and for runs made
// before selection existed the final one — never the top of the test curve.
func TestMainAUC(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		s         Summary
		auc, loss float64
	}{
		{Summary{TestAUCBest: f(0.9), TestAUCFinal: f(0.8), TestAUCSelected: f(0.85), TestLossFinal: f(0.5), TestLossSelected: f(0.4)}, 0.85, 0.4},
		{Summary{TestAUCBest: f(0.9), TestAUCFinal: f(0.8), TestLossFinal: f(0.5)}, 0.8, 0.5},
	}
	for i, tc := range tests {
		if a, l := tc.s.MainAUC(), tc.s.MainLoss(); *a != tc.auc || *l != tc.loss {
			t.Errorf("case %d: MainAUC %v, MainLoss %v, want %v, %v", i, *a, *l, tc.auc, tc.loss)
		}
	}
}

// TestDCSTunedAndStrongest: with a tuned attacker's figure, T-DCS takes it
// in place of its default's, the default T-DCS beside it does not, and the
// strongest attack may be a tuned one; the ranking follows the DCS against
// the strongest attack. By hand, with MP = MP* (the cost term vanishes),
// DCS = 1/(1 + AP/√2).
func TestDCSTunedAndStrongest(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	run := func(method string, leak map[string]float64) *Run {
		s := &Summary{TestAUCSelected: f(0.8), Leak: map[string]LeakStat{}, Raw: map[string]any{"step_ms_mean": 1.0}}
		for k, v := range leak {
			s.Leak[k] = LeakStat{Q95Abs: f(v)}
		}
		return &Run{Setting: Setting{Dataset: "d", Method: method}, Summary: s, Status: "done"}
	}
	runs := []*Run{
		// A: norm 0.1 but its tuned attacker 0.3; spectral 0.2 (untuned).
		run("none", map[string]float64{"norm/cut": 0.1, "norm_tuned/cut": 0.3, "spectral/cut": 0.2}),
		// B: norm 0.25, tuned 0.05 (worse than the default: it still
		// stands for norm in T-DCS), spectral 0.0.
		run("iso", map[string]float64{"norm/cut": 0.25, "norm_tuned/cut": 0.05, "spectral/cut": 0.0}),
	}
	keys := []string{"norm/cut", "norm_tuned/cut", "spectral/cut"}
	d := func(q float64) float64 { return 1 / (1 + 2*q/math.Sqrt2) }
	scores, _, _ := dcsScores(groups(runs), "d", keys)
	want := map[string]struct {
		tdcs, dflt, sdcs float64
		strong           string
	}{
		"none": {(d(0.3) + d(0.2)) / 2, (d(0.1) + d(0.2)) / 2, d(0.3), "norm_tuned/cut"},
		"iso":  {(d(0.05) + d(0)) / 2, (d(0.25) + d(0)) / 2, d(0.25), "norm/cut"},
	}
	// iso's strongest (0.25) is weaker than none's (0.3): iso ranks first
	// although its T-DCS over the tuned figures is also higher.
	if scores[0].g.Setting.Method != "iso" {
		t.Errorf("first %s, want iso", scores[0].g.Setting.Method)
	}
	for _, s := range scores {
		w := want[s.g.Setting.Method]
		if math.Abs(s.tdcs-w.tdcs) > 1e-12 || math.Abs(s.tdcsDefault-w.dflt) > 1e-12 || math.Abs(s.sdcs-w.sdcs) > 1e-12 || s.strongKey != w.strong {
			t.Errorf("%s: T-DCS %v default %v strongest %v (%s); want %v %v %v (%s)", s.g.Setting.Method, s.tdcs, s.tdcsDefault, s.sdcs, s.strongKey,
				w.tdcs, w.dflt, w.sdcs, w.strong)
		}
	}
	tab, _ := dcsTable(groups(runs), keys)
	if got := tab.Rows[1][6].Text; got != "norm_tuned (AP 0.600)" {
		t.Errorf("strongest attack cell %q", got)
	}
}
