package report

import (
	"math"
	"slices"
	"testing"
)

func ptr(v float64) *float64 { return &v }

// TestMatrixCells checks the matrix against hand-computed cells: two
// seeds of `none` (norm q95_abs 0.4 and 0.5 → 0.45; completion AUC 0.8
// and 0.9 → 0.85 − ½ = 0.35; kept model's test AUC 0.80 and 0.82 → 0.81) and one
// Marvell run (norm 0.1, completion 0.84 → 0.34, test AUC 0.78 → cost
// 0.81 − 0.78 = 0.03, none's cost 0). The tuned norm attacker's row
// follows norm's; the strongest per-batch attack is the tuned norm against
// none (0.46 > 0.45 > 0.3) and spectral against Marvell (0.3 > 0.25 > 0.1).
func TestMatrixCells(t *testing.T) {
	run := func(method, param string, norm, tuned, spectral, comp, auc float64) *Run {
		return &Run{Setting: Setting{Dataset: "d", Method: method, Param: param}, Summary: &Summary{
			TestAUCSelected: ptr(auc), TestAUCBest: ptr(0.9), // the cost reads the kept model, not the curve's top
			Leak: map[string]LeakStat{"norm/cut": {Q95Abs: ptr(norm)}, "norm/first": {Q95Abs: ptr(0.2)},
				"spectral/cut": {Q95Abs: ptr(spectral)}, "norm_tuned/cut": {Q95Abs: ptr(tuned)}},
			Raw: map[string]any{"eval_attacks_final": map[string]any{"completion/auc": comp, "completion/accuracy": 0.7}},
		}}
	}
	gs := groups([]*Run{run("none", "", 0.4, 0.46, 0.3, 0.8, 0.80), run("none", "", 0.5, 0.46, 0.3, 0.9, 0.82),
		run("marvell", "s=4", 0.1, 0.25, 0.3, 0.84, 0.78)})
	cols, rows, vals, strongest := matrixCells(gs, "d")
	if len(cols) != 2 || !slices.Equal(rows, []string{"norm (q95 |leak−½|)", "norm_tuned (q95 |leak−½|)", "spectral (q95 |leak−½|)",
		"completion (AUC − ½)", "strongest attack (q95 |leak−½|)", "test-AUC cost"}) {
		t.Fatalf("cols %d, rows %v", len(cols), rows)
	}
	if !slices.Equal(strongest, []string{"norm_tuned", "spectral"}) {
		t.Errorf("strongest attacks %v, want norm_tuned, spectral", strongest)
	}
	want := [][]float64{{0.45, 0.1}, {0.46, 0.25}, {0.3, 0.3}, {0.35, 0.34}, {0.46, 0.3}, {0, 0.03}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(vals[i][j]-want[i][j]) > 1e-12 {
				t.Errorf("cell %s / %s = %v, want %v", rows[i], cols[j].Setting.Label(), vals[i][j], want[i][j])
			}
		}
	}
	if c, _, _, _ := matrixCells(gs[:1], "d"); c != nil {
		t.Error("one setting: a matrix")
	}
	p, _, _, err := matrixFigure(gs, "d")
	if err != nil || p == nil {
		t.Fatalf("figure %v, %v", p, err)
	}
}
