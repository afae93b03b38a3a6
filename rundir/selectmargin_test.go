package rundir

import (
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestSelectMarginByHand feeds validation AUCs to a recorder of 30
// validation rows, 6 positive, and checks which evaluation it keeps and
// when it stalls, with key select_margin se and none. Hanley and McNeil's
// standard errors, by hand: at A = 0.80, Q1 = 0.8/1.2, Q2 = 1.28/1.8, SE² =
// (0.16 + 5·0.026667 + 23·0.071111)/144 = 0.013395, SE = 0.1157; at A =
// 0.92, Q1 = 0.92/1.08, Q2 = 1.6928/1.92, SE² = (0.0736 + 5·0.005452 +
// 23·0.035267)/144 = 0.0063333, SE = 0.0796. So 0.90 (+0.10) does not
// replace 0.80, 0.92 (+0.12) does, and 0.99 (+0.07) does not replace
// 0.92; without a margin each better AUC replaces the kept one.
func TestSelectMarginByHand(t *testing.T) {
	vals := []float64{0.80, 0.90, 0.92, 0.99, 0.85, 0.50}
	labels := make([]uint8, 30)
	for i := range 6 {
		labels[3*i] = 1
	}
	for _, tc := range []struct {
		margin      string
		wantSel     []int64
		wantStalled []bool
	}{
		{config.SelectMarginSE, []int64{10, 10, 30, 30, 30, 30}, []bool{false, false, false, false, false, true}},
		{config.SelectMarginOff, []int64{10, 20, 30, 40, 40, 40}, []bool{false, false, false, false, false, false}},
	} {
		t.Run(tc.margin, func(t *testing.T) {
			r := &Recorder{cfg: config.Config{Select: config.SelectBest, SelectMargin: tc.margin, EarlyStop: 3}}
			r.SetValRows(len(labels))
			r.SetValLabels(labels)
			for i, v := range vals {
				r.addEval(EvalRecord{Step: int64(10 * (i + 1)), ValAUC: ptr(v)})
				got, ok := r.Selected()
				if !ok || got.Step != tc.wantSel[i] {
					t.Fatalf("after validation AUC %.2f: kept step %d, want %d", v, got.Step, tc.wantSel[i])
				}
				if r.Stalled() != tc.wantStalled[i] {
					t.Fatalf("after validation AUC %.2f: stalled %v, want %v", v, r.Stalled(), tc.wantStalled[i])
				}
			}
		})
	}
	// Without a positive validation row the standard error is undefined:
	// no margin, any better AUC replaces the kept one.
	r := &Recorder{cfg: config.Config{Select: config.SelectBest, SelectMargin: config.SelectMarginSE}}
	r.SetValRows(30)
	r.SetValLabels(make([]uint8, 30))
	r.addEval(EvalRecord{Step: 1, ValAUC: ptr(0.5)})
	r.addEval(EvalRecord{Step: 2, ValAUC: ptr(0.51)})
	if got, _ := r.Selected(); got.Step != 2 {
		t.Errorf("with no positive validation row: kept step %d, want 2", got.Step)
	}
}
