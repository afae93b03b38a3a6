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
	want := []struct {
		method string
		tdcs   float64
		step   float64
	}{
		{"grad_dp", 1 / 1.1, 1.2},
		{"iso", (d(0.3, 0.76) + d(0.2, 0.76)) / 2, 1.1},
		{"none", (1/(1+0.4*math.Sqrt2) + 1/(1+0.3*math.Sqrt2)) / 2, 1},
		{"sparsify", d(0.7, 0.79), 1},
	}
	if len(scores) != len(want) {
		t.Fatalf("%d settings, want %d", len(scores), len(want))
	}
	for i, w := range want {
		s := scores[i]
		if s.g.Setting.Method != w.method || math.Abs(s.tdcs-w.tdcs) > 1e-12 || math.Abs(s.stepMS-w.step) > 1e-12 {
			t.Errorf("rank %d: %s T-DCS %v step ×%v, want %s %v ×%v", i+1, s.g.Setting.Method, s.tdcs, s.stepMS, w.method, w.tdcs, w.step)
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
