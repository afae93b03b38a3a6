package rundir

import (
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

func ptr(x float64) *float64 { return &x }

// TestSelectionAndStalling feeds a hand-made sequence of evaluations and
// checks the selected one (the best validation AUC, the earliest of ties;
// evaluations without a validation AUC never selected) and when the run
// counts as stalled.
func TestSelectionAndStalling(t *testing.T) {
	vals := []*float64{ptr(0.60), nil, ptr(0.70), ptr(0.65), ptr(0.70), ptr(0.69), ptr(0.71), ptr(0.5), ptr(0.5)}
	//                  step 10   20    30          40          50 (tie)    60          70 (best)   80         90
	wantSel := []int64{10, 10, 30, 30, 30, 30, 70, 70, 70}
	// early stop 2: stalled once two evaluations in a row bring nothing strictly better.
	wantStalled := []bool{false, false, false, false, true, true, false, false, true}
	for _, tc := range []struct {
		name    string
		sel     string
		early   int
		select_ func(i int) int64
	}{
		{"best", config.SelectBest, 2, func(i int) int64 { return wantSel[i] }},
		{"last", config.SelectLast, 0, func(i int) int64 { return int64(10 * (i + 1)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recorder{cfg: config.Config{Select: tc.sel, EarlyStop: tc.early}}
			for i, v := range vals {
				r.addEval(EvalRecord{Step: int64(10 * (i + 1)), TestAUC: 1 - float64(i)/100, ValAUC: v})
				got, ok := r.Selected()
				if !ok || got.Step != tc.select_(i) {
					t.Fatalf("after step %d: selected step %d, want %d", 10*(i+1), got.Step, tc.select_(i))
				}
				if tc.early > 0 && r.Stalled() != wantStalled[i] {
					t.Fatalf("after step %d: stalled %v, want %v", 10*(i+1), r.Stalled(), wantStalled[i])
				}
				if tc.early == 0 && r.Stalled() {
					t.Fatal("stalled without early stopping")
				}
			}
		})
	}
}

// TestSelectionWarnings checks the summary's warnings and loss windows on
// hand-made losses and AUCs.
func TestSelectionWarnings(t *testing.T) {
	rising := make([]float64, 100)
	falling := make([]float64, 100)
	for i := range rising {
		rising[i] = 0.5 + float64(i)/1000
		falling[i] = 0.7 - float64(i)/1000
	}
	for _, tc := range []struct {
		name       string
		losses     []float64
		val, base  float64
		want       []string
		keys       [][]string // the keys each warning names, structured
		first, lst float64
		wideStart  string
	}{
		// 100 steps: windows of 10; means 0.5045 and 0.5945.
		{"loss rose", rising, 0.80, 0.80, []string{"did not fall"}, [][]string{{"lr"}}, 0.5045, 0.5945, ""},
		{"below the baseline", falling, 0.70, 0.75, []string{"below the logistic baseline"}, [][]string{nil}, 0.6955, 0.6055, ""},
		{"within the tolerance", falling, 0.745, 0.75, nil, nil, 0.6955, 0.6055, ""},
		// A model started at the baseline starts trained: its loss need not fall.
		{"loss rose, started at the baseline", rising, 0.80, 0.80, nil, nil, 0.5045, 0.5945, config.WideStartBaseline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Recorder{cfg: config.Config{Select: config.SelectBest, WideStart: tc.wideStart}, losses: tc.losses,
				baseline: &BaselineSummary{Columns: "all", ValAUC: ptr(tc.base), TestAUC: ptr(tc.base)}}
			r.addEval(EvalRecord{Step: 5, TestAUC: 0.7, ValAUC: ptr(tc.val)})
			s := &Summary{}
			r.selection(s)
			const eps = 1e-12
			if d := s.TrainLossFirst - tc.first; d > eps || d < -eps {
				t.Errorf("first-window loss %v, want %v", s.TrainLossFirst, tc.first)
			}
			if d := s.TrainLossLast - tc.lst; d > eps || d < -eps {
				t.Errorf("last-window loss %v, want %v", s.TrainLossLast, tc.lst)
			}
			if len(s.Warnings) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", s.Warnings, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(s.Warnings[i], w) {
					t.Errorf("warning %q, want one saying %q", s.Warnings[i], w)
				}
				kw := s.KeyedWarnings()[i]
				if !slices.Equal(kw.Keys, tc.keys[i]) {
					t.Errorf("warning %q: keys %v, want %v", kw.Text, kw.Keys, tc.keys[i])
				}
				for _, k := range kw.Keys {
					if !strings.Contains(kw.Text, "key "+k) {
						t.Errorf("warning %q: its key %s is not named in it", kw.Text, k)
					}
				}
			}
			if s.TestAUCSelected != 0.7 || s.SelectedStep != 5 || s.TestAUCBestNote == "" {
				t.Errorf("selected %+v", s)
			}
		})
	}
}
