package integrity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// handVflipRows is a VflipRows over three one-column parties whose
// network is fixed by hand: hidden units 2k and 2k+1 are relu(z_k) and
// relu(−z_k), and output i is Σ_{k≠i} (h_2k − h_2k+1) = Σ_{k≠i} z_k over
// the blocks not masked. Column moments mean 1, variance 4 (scale 2);
// every pair's training error mean 1 and standard deviation 0.5.
func handVflipRows(t *testing.T) *VflipRows {
	t.Helper()
	v := &VflipRows{Threshold: 2}
	if err := v.SetBlocks([]string{"p1", "p2", "p3"}, [][2]int{{0, 1}, {1, 2}, {2, 3}}); err != nil {
		t.Fatal(err)
	}
	h := v.enc.Out()
	clear(v.enc.W.Data)
	clear(v.enc.B.Data)
	clear(v.dec.W.Data)
	clear(v.dec.B.Data)
	for k := range 3 {
		v.enc.W.Data[k*h+2*k], v.enc.W.Data[k*h+2*k+1] = 1, -1
		for i := range 3 {
			if i != k {
				v.dec.W.Data[(2*k)*3+i], v.dec.W.Data[(2*k+1)*3+i] = 1, -1
			}
		}
	}
	for c := range 3 {
		v.mean[c], v.vr[c] = 1, 4
	}
	v.setScale()
	for i := range 3 {
		for j := range 3 {
			v.errMean[i][j], v.errSq[i][j] = 1, 1+0.25
		}
	}
	v.batches = aeWarmup
	return v
}

// TestVflipRowsByHand: with mask "keep only j", block i's error is
// (z_j − z_i)², z = (e − 1)/2; each z-score is 2s − 2; a party is
// flagged when both its pairs exceed 2 (the majority of two).
func TestVflipRowsByHand(t *testing.T) {
	v := handVflipRows(t)
	// z rows: (1,1,4), (0,0,0), (0,1,2), (0,3,−3).
	e := tensor.FromSlice(4, 3, []float32{3, 3, 9, 1, 1, 1, 1, 3, 5, 1, 7, -5})
	scores := make([]float64, 4)
	flags := make([]bool, 12)
	v.ScoreRows(e, scores, flags)
	// Row 1: s_01 = 0, s_02 = 9, s_10 = 0, s_12 = 9, s_20 = s_21 = 9:
	// party scores min(−2, 16) = −2, −2, 16. Row 2: every s 0, z −2.
	// Row 3: s_01 = 1, s_02 = 4, s_12 = 1: z 0, 6, 0; each party's
	// smaller z is 0 (one vote of two is no majority). Row 4: s 9, 9, 9,
	// 36, 9, 36: z 16, 16, 16, 70, 16, 70, every party flagged, the row's
	// score is party 3's min(16, 70) = 16 (party 2: min(16, 70) = 16).
	wantScores := []float64{16, -2, 0, 16}
	wantFlags := []bool{false, false, true, false, false, false, false, false, false, true, true, true}
	for r, w := range wantScores {
		if math.Abs(scores[r]-w) > 1e-5 {
			t.Errorf("row %d: score %v, want %v", r, scores[r], w)
		}
	}
	for i, w := range wantFlags {
		if flags[i] != w {
			t.Errorf("row %d party %d: flagged %v, want %v", i/3, i%3, flags[i], w)
		}
	}
	if got := v.PartyScores(); math.Abs(got[0]-16) > 1e-5 || math.Abs(got[1]-16) > 1e-5 || math.Abs(got[2]-16) > 1e-5 {
		t.Errorf("party scores %v, want the largest over rows 16, 16, 16", got)
	}
	v.Purify(e, flags)
	// Row 1: party 3 reconstructed from z_1 + z_2 = 2: 1 + 2·2 = 5.
	// Row 4: everything masked, output 0: the mean, 1.
	want := [][]float32{{3, 3, 5}, {1, 1, 1}, {1, 3, 5}, {1, 1, 1}}
	for r, row := range want {
		for c, w := range row {
			if got := e.Data[r*3+c]; math.Abs(float64(got-w)) > 1e-5 {
				t.Errorf("purified row %d column %d: %v, want %v", r, c, got, w)
			}
		}
	}
}

// TestVflipRowsBeforeWarmup: nothing is scored or flagged before ten
// training batches.
func TestVflipRowsBeforeWarmup(t *testing.T) {
	v := handVflipRows(t)
	v.batches = aeWarmup - 1
	e := tensor.FromSlice(1, 3, []float32{3, 3, 9})
	scores, flags := []float64{7}, []bool{true, true, true}
	v.ScoreRows(e, scores, flags)
	if scores[0] != 0 || flags[0] || flags[1] || flags[2] {
		t.Errorf("before the warm-up: score %v, flags %v", scores, flags)
	}
}

// TestVflipRowsLearnt: three parties' two-column blocks drawn from one
// latent plus noise. After 300 training batches, a row whose third
// block is another row's (a trigger that looks like a normal block,
// only not this row's) is told from clean rows by its score (AUC ≥ 0.9),
// the third party is the one flagged, few clean rows are flagged, and
// purification brings the block closer to the row's own than the
// swapped block was.
func TestVflipRowsLearnt(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	v := &VflipRows{Threshold: VflipRowsThreshold}
	if err := v.SetBlocks([]string{"p1", "p2", "p3"}, [][2]int{{0, 2}, {2, 4}, {4, 6}}); err != nil {
		t.Fatal(err)
	}
	draw := func(rows int) *tensor.Matrix {
		m := tensor.New(rows, 6)
		for r := range rows {
			a, b := rng.NormFloat64(), rng.NormFloat64()
			for p := range 3 {
				m.Data[r*6+2*p] = float32(3 + 2*a + 0.2*rng.NormFloat64())
				m.Data[r*6+2*p+1] = float32(-1 + a - b + 0.2*rng.NormFloat64())
			}
		}
		return m
	}
	for step := range 300 {
		v.Observe(int64(step), draw(128))
	}
	const n = 1000
	clean := draw(n)
	trig := clean.Clone()
	for r := range n {
		o := (r + 1 + rng.IntN(n-1)) % n
		copy(trig.Data[r*6+4:r*6+6], clean.Data[o*6+4:o*6+6])
	}
	sc, st := make([]float64, n), make([]float64, n)
	fc, ft := make([]bool, 3*n), make([]bool, 3*n)
	v.ScoreRows(clean, sc, fc)
	v.ScoreRows(trig, st, ft)
	labels := make([]uint8, 2*n)
	for r := range n {
		labels[n+r] = 1
	}
	auc, _ := metrics.AUC(append(sc, st...), labels, nil)
	count := func(f []bool, p int) int {
		c := 0
		for r := range n {
			if f[r*3+p] {
				c++
			}
		}
		return c
	}
	cleanFlagged := count(fc, 0) + count(fc, 1) + count(fc, 2)
	t.Logf("AUC %.3f; clean rows flagged %d of %d (party blocks); triggered: party 3 flagged %d, parties 1–2 %d, %d", auc, cleanFlagged, 3*n, count(ft, 2), count(ft, 0), count(ft, 1))
	if auc < 0.9 {
		t.Errorf("row AUC %.3f, want ≥ 0.9", auc)
	}
	if count(ft, 2) < n/2 || count(ft, 0)+count(ft, 1) > count(ft, 2)/4 {
		t.Errorf("triggered rows: party 3 flagged %d, parties 1 and 2 %d and %d", count(ft, 2), count(ft, 0), count(ft, 1))
	}
	if cleanFlagged > 3*n/10 {
		t.Errorf("%d of %d clean blocks flagged", cleanFlagged, 3*n)
	}
	dist := func(m *tensor.Matrix) float64 {
		s := 0.0
		for r := range n {
			if !ft[r*3+2] {
				continue
			}
			for c := 4; c < 6; c++ {
				d := float64(m.Data[r*6+c] - clean.Data[r*6+c])
				s += d * d
			}
		}
		return s
	}
	before := dist(trig)
	v.Purify(trig, ft)
	after := dist(trig)
	t.Logf("flagged blocks' squared distance to the row's own: swapped %.1f, purified %.1f", before, after)
	if after > before/4 {
		t.Errorf("purification left squared distance %.1f of the swapped block's %.1f", after, before)
	}
}

// TestVflipRowsRefusals: one block, a gap between blocks, names not one
// per block; and vflip_rows is a cross-party detector.
func TestVflipRowsRefusals(t *testing.T) {
	for _, tc := range []struct {
		names []string
		cols  [][2]int
		want  string
	}{
		{[]string{"a"}, [][2]int{{0, 2}}, "at least two passive parties"},
		{[]string{"a", "b"}, [][2]int{{0, 2}, {3, 4}}, "party b's block [3, 4) does not follow"},
		{[]string{"a"}, [][2]int{{0, 2}, {2, 4}}, "1 party names for 2 blocks"},
	} {
		err := (&VflipRows{}).SetBlocks(tc.names, tc.cols)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "vflip_rows") {
			t.Errorf("%v %v: %v, want an error naming vflip_rows and %q", tc.names, tc.cols, err, tc.want)
		}
	}
	if !IsCrossParty("vflip_rows") {
		t.Error("vflip_rows is not a cross-party detector")
	}
}
