package rundir

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// TestHeldOutBelowBaselineWarns: the baseline ranks the 40 test rows
// perfectly (AUC 1 in every bootstrap replicate) and the kept model gives
// every row one score (AUC ½ in every replicate, ties counting half), so
// the paired interval of the difference is exactly −0.5 … −0.5 and the
// summary warns, keyed val_frac, though the validation AUCs agree. Equal
// scores give a zero interval and no warning; a validation shortfall
// warns once, by the validation.
func TestHeldOutBelowBaselineWarns(t *testing.T) {
	labels := make([]uint8, 40)
	perfect := make([]float64, 40)
	for i := range labels {
		labels[i] = uint8(i % 2)
		perfect[i] = float64(labels[i])
	}
	flat := make([]float64, 40)
	for _, tc := range []struct {
		name      string
		kept      []float64
		val, base float64
		want      []string
	}{
		{"held out below", flat, 0.8, 0.8, []string{"-0.5000 … -0.5000", "on 17 validation rows"}},
		{"same scores", perfect, 0.8, 0.8, nil},
		{"validation below too", flat, 0.7, 0.8, []string{"best validation AUC 0.7000 stays below"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recorder{cfg: config.Config{Select: config.SelectBest, Seed: 3}, valRows: 17,
				split:     &data.Split{Test: &data.Dataset{Labels: labels}},
				selScores: tc.kept, selLabels: labels, selStep: 5,
				baseline: &BaselineSummary{Columns: "all", ValAUC: ptr(tc.base), TestAUC: ptr(1.0), testScores: perfect}}
			r.addEval(EvalRecord{Step: 5, TestAUC: 0.5, ValAUC: ptr(tc.val)})
			s := &Summary{}
			r.selection(s)
			if len(s.Warnings) != len(tc.want[:min(len(tc.want), 1)]) {
				t.Fatalf("warnings %q, want %d", s.Warnings, min(len(tc.want), 1))
			}
			for _, w := range tc.want {
				if !strings.Contains(s.Warnings[0], w) {
					t.Errorf("warning %q, want it to say %q", s.Warnings[0], w)
				}
			}
			if tc.name == "held out below" {
				if kw := s.KeyedWarnings()[0]; len(kw.Keys) != 1 || kw.Keys[0] != "val_frac" || !strings.Contains(kw.Text, "key val_frac") {
					t.Errorf("keys %v of %q, want val_frac named", kw.Keys, kw.Text)
				}
				if d := s.TestAUCMinusBaselineCI95; d == nil || d[0] != -0.5 || d[1] != -0.5 {
					t.Errorf("paired interval %v, want exactly [-0.5, -0.5]", d)
				}
			}
		})
	}
}
