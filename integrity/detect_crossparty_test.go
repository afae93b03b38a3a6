package integrity

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// crossBatch draws rows of three parties' blocks from one latent of
// dimension 2: block k = latent · basis_k + 0.3 noise, except that
// party noisy's block is replaced, on its first k rows, by N(0, 1)
// noise.
func crossBatch(rng *rand.Rand, basis [][][]float64, rows, noisy, k int) *tensor.Matrix {
	d := 0
	for _, b := range basis {
		d += len(b[0])
	}
	e := tensor.New(rows, d)
	for r := range rows {
		u, v := rng.NormFloat64(), rng.NormFloat64()
		at := 0
		for p, b := range basis {
			for c := range b[0] {
				x := u*b[0][c] + v*b[1][c] + 0.3*rng.NormFloat64()
				if p == noisy && r < k {
					x = rng.NormFloat64()
				}
				e.Data[r*d+at+c] = float32(x)
			}
			at += len(b[0])
		}
	}
	return e
}

// threeBases are three parties' bases (4, 3 and 4 columns) of one
// two-dimensional latent, for crossBatch.
var threeBases = [][][]float64{
	{{1, 0.5, 0, -1}, {0, 1, 1, 0.2}},
	{{0.3, -0.7, 1}, {1, 0.1, -0.5}},
	{{0.8, 0.2, -0.4, 0.6}, {-0.2, 0.9, 0.3, 0}},
}

// pairErrorMeans is the mean error of block i reconstructed from block
// j alone, for every i ≠ j, on e, read without learning.
func pairErrorMeans(c *crossParty, e *tensor.Matrix) [][]float64 {
	c.standardise(e)
	for m := range c.masks {
		c.reconstruct(m)
	}
	out := make([][]float64, len(c.cols))
	for i := range c.cols {
		out[i] = make([]float64, len(c.cols))
		for j := range c.cols {
			if i == j {
				continue
			}
			for _, v := range c.pairErrors(i, j)[:e.Rows] {
				out[i][j] += v
			}
			out[i][j] /= float64(e.Rows)
		}
	}
	return out
}

// TestCrossPartyLinearBlock: with block b = M·a (M invertible) and block
// c independent of both, each of a and b is a linear function of the
// other, so after online training the error of reconstructing one from
// the other approaches 0. Nothing predicts a standardised block from an
// independent one better than its mean, with mean squared error 1 (its
// variance): the errors of c from a or b, and of a or b from c, are
// near 1.
func TestCrossPartyLinearBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m := [3][3]float64{{1, 0.5, 0}, {-0.3, 1, 0.4}, {0.2, 0, 1}}
	batch := func() *tensor.Matrix {
		e := tensor.New(128, 8)
		for r := range 128 {
			row := e.Data[r*8 : (r+1)*8]
			var a [3]float64
			for i := range a {
				a[i] = rng.NormFloat64()
				row[i] = float32(a[i])
			}
			for i := range 3 {
				row[3+i] = float32(m[i][0]*a[0] + m[i][1]*a[1] + m[i][2]*a[2])
			}
			row[6], row[7] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		return e
	}
	c := &crossParty{}
	if err := c.SetBlocks([]string{"a", "b", "c"}, [][2]int{{0, 3}, {3, 6}, {6, 8}}); err != nil {
		t.Fatal(err)
	}
	for step := range 600 {
		c.Observe(int64(step), batch())
	}
	errs := pairErrorMeans(c, batch())
	t.Logf("errors of block i from block j alone (a, b, c): %.4f", errs)
	if errs[0][1] > 0.05 || errs[1][0] > 0.05 {
		t.Errorf("a from b %.4f, b from a %.4f, want ≤ 0.05 (linearly dependent)", errs[0][1], errs[1][0])
	}
	for _, p := range [][2]int{{2, 0}, {2, 1}, {0, 2}, {1, 2}} {
		if v := errs[p[0]][p[1]]; math.Abs(v-1) > 0.2 {
			t.Errorf("block %d from block %d: error %.4f, want 1 ± 0.2 (independent: the block's variance)", p[0], p[1], v)
		}
	}
}

// TestCrossPartyNoisyRows: three parties' blocks share one latent; after
// 200 honest batches (each scoring below 5 once trained), one batch where
// party 3 cheats: its block noise on 32 of 128 rows, noise on every row,
// or one constant row repeated (a constant free-rider, whose own block
// the reconstruction fits exactly once it has learnt it: the other
// direction of its pairs sees it). Party 3's score rises past 10 while
// the others' stay below 3 (each is the smaller of its two pairs'
// z-scores, and the pair of parties 1 and 2 is intact), and the
// detector's score is party 3's.
func TestCrossPartyNoisyRows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cheat func(rng *rand.Rand) *tensor.Matrix
	}{
		{"noise on 32 of 128 rows", func(rng *rand.Rand) *tensor.Matrix { return crossBatch(rng, threeBases, 128, 2, 32) }},
		{"noise on every row", func(rng *rand.Rand) *tensor.Matrix { return crossBatch(rng, threeBases, 128, 2, 128) }},
		{"a constant block", func(rng *rand.Rand) *tensor.Matrix {
			e := crossBatch(rng, threeBases, 128, -1, 0)
			for r := 1; r < e.Rows; r++ {
				copy(e.Data[r*e.Cols+7:r*e.Cols+11], e.Data[7:11])
			}
			return e
		}},
	} {
		rng := rand.New(rand.NewPCG(13, 14))
		d, err := NewDetector("vflip")
		if err != nil {
			t.Fatal(err)
		}
		c := d.(CrossPartyDetector)
		if err := c.SetBlocks([]string{"p1", "p2", "p3"}, [][2]int{{0, 4}, {4, 7}, {7, 11}}); err != nil {
			t.Fatal(err)
		}
		for step := range 200 {
			s := c.Observe(int64(step), crossBatch(rng, threeBases, 128, -1, 0))
			if step < aeWarmup && s != 0 {
				t.Fatalf("%s: warm-up batch %d scored %g", tc.name, step, s)
			}
			if step >= 150 && s >= 5 {
				t.Errorf("%s: honest batch %d scored %g (parties %v)", tc.name, step, s, c.PartyScores())
			}
		}
		s := c.Observe(200, tc.cheat(rng))
		ps := c.PartyScores()
		t.Logf("%s: party scores %.2f", tc.name, ps)
		if ps[2] < 10 || ps[0] >= 3 || ps[1] >= 3 || s != ps[2] {
			t.Errorf("%s: party scores %v, detector %g: want party 3's ≥ 10 and the detector's, the others' < 3", tc.name, ps, s)
		}
	}
}

// TestCrossPartyNoInfo checks b_k, a block's error when nothing is known,
// by hand: a block of three columns of equal variance and one constant
// column has b = 3/4 (the standardised live columns have variance 1, the
// constant one 0); a constant block has b = 0; a block of two columns of
// variances 1 and 0.01 has b = (1 + 0.01/0.0505)/2 (the second floored at
// a tenth of the block's mean variance, 0.0505).
func TestCrossPartyNoInfo(t *testing.T) {
	c := &crossParty{}
	if err := c.SetBlocks([]string{"a", "b", "c"}, [][2]int{{0, 4}, {4, 6}, {6, 8}}); err != nil {
		t.Fatal(err)
	}
	e := tensor.New(64, 8)
	for r := range 64 {
		x := e.Data[r*8 : (r+1)*8]
		s := float32(1)
		if r%2 == 1 {
			s = -1
		}
		x[0], x[1], x[2], x[3] = s, 3*s, 2*s, 5 // variances 1, 9, 4, 0
		x[4], x[5] = s, 0.1*s                   // variances 1 and 0.01
		x[6], x[7] = 3, -2
	}
	c.standardise(e)
	want := []float64{3.0 / 4, (1 + 0.01/0.0505) / 2, 0}
	for k, w := range want {
		if math.Abs(c.noInfo[k]-w) > 1e-6 {
			t.Errorf("block %d: no-information error %.6f, want %.6f", k, c.noInfo[k], w)
		}
	}
}

// TestCrossPartyGradient: the gradient the detector learns from, for
// each mask (each party alone, every party but one), is that of the sum over the
// masked parties of the mean over the rows of the party's mean squared
// reconstruction error, checked by central differences on every encoder
// and decoder weight.
func TestCrossPartyGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	c := &crossParty{}
	if err := c.SetBlocks([]string{"a", "b", "c"}, [][2]int{{0, 2}, {2, 5}, {5, 6}}); err != nil {
		t.Fatal(err)
	}
	if len(c.masks) != 6 || c.masks[c.keep[1]][0] != 0 || c.masks[c.keep[1]][1] != 2 {
		t.Fatalf("masks %v, keep %v: want each party alone, then all but each", c.masks, c.keep)
	}
	c.z.Resize(6, 6)
	for i := range c.z.Data {
		c.z.Data[i] = float32(rng.NormFloat64())
	}
	for i := range c.enc.B.Data {
		c.enc.B.Data[i] = 0.3 // off the ReLU kink
	}
	for k := range c.masks {
		loss := func() float64 {
			c.reconstruct(k)
			s := 0.0
			for _, errs := range c.merr[k] {
				for _, e := range errs[:c.z.Rows] {
					s += e
				}
			}
			return s / float64(c.z.Rows)
		}
		loss()
		c.enc.Backward(c.relu.Backward(c.dec.Backward(&c.dy)))
		for _, layer := range []struct {
			name string
			w, g []float32
		}{{"encoder", c.enc.W.Data, append([]float32(nil), c.enc.Params()[0].G.Data...)},
			{"decoder", c.dec.W.Data, append([]float32(nil), c.dec.Params()[0].G.Data...)}} {
			const h = 1e-3
			for i := range layer.w {
				old := layer.w[i]
				layer.w[i] = old + h
				up := loss()
				layer.w[i] = old - h
				down := loss()
				layer.w[i] = old
				num := (up - down) / (2 * h)
				if math.Abs(num-float64(layer.g[i])) > 2e-3*math.Max(1, math.Abs(num)) {
					t.Errorf("mask %d, %s weight %d: gradient %g, central difference %g", k, layer.name, i, layer.g[i], num)
				}
			}
		}
	}
}

// TestCrossPartyRefusals: fewer than two blocks, blocks that do not
// tile the embedding, a guard fed before its parties are set, and a
// one-party detector in a run of several are refused, each naming what.
func TestCrossPartyRefusals(t *testing.T) {
	c := &crossParty{}
	for _, tc := range []struct {
		names []string
		cols  [][2]int
		want  string
	}{
		{[]string{"p1"}, [][2]int{{0, 4}}, "at least two passive parties"},
		{nil, nil, "at least two passive parties"},
		{[]string{"p1", "p2"}, [][2]int{{0, 4}, {5, 8}}, "party p2's block [5, 8)"},
		{[]string{"p1", "p2"}, [][2]int{{0, 4}, {4, 4}}, "party p2's block [4, 4)"},
		{[]string{"p1"}, [][2]int{{0, 4}, {4, 6}}, "1 party names for 2 blocks"},
	} {
		if err := c.SetBlocks(tc.names, tc.cols); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetBlocks(%v, %v): %v, want %q", tc.names, tc.cols, err, tc.want)
		}
	}
	g, err := NewGuard([]string{"vflip"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Batch(0, tensor.New(4, 3)); err == nil || !strings.Contains(err.Error(), "one passive party") {
		t.Errorf("a guard without parties: %v", err)
	}
	g, err = NewGuard([]string{"autoencoder"}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetParties([]string{"p1", "p2"}, [][2]int{{0, 2}, {2, 4}}); err == nil || !strings.Contains(err.Error(), "detector autoencoder scores one passive party's") {
		t.Errorf("autoencoder over two parties: %v", err)
	}
	if !IsCrossParty("vflip") || IsCrossParty("autoencoder") || IsCrossParty("nonesuch") {
		t.Error("IsCrossParty")
	}
}

// TestGuardCrossPartyAlarm: a guard running vflip reports each party's
// score as "vflip/NAME" and, past the threshold, alarms naming the party
// whose block was replaced by noise.
func TestGuardCrossPartyAlarm(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	basis := threeBases
	g, err := NewGuard([]string{"vflip"}, map[string]float64{"vflip": 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetParties([]string{"bank", "telco", "shop"}, [][2]int{{0, 4}, {4, 7}, {7, 11}}); err != nil {
		t.Fatal(err)
	}
	for step := range 150 {
		scores, err := g.Batch(int64(step), crossBatch(rng, basis, 128, -1, 0))
		if err != nil {
			t.Fatalf("honest batch %d: %v", step, err)
		}
		if _, ok := scores["vflip/telco"]; !ok || len(scores) != 4 {
			t.Fatalf("scores %v, want vflip and one per party", scores)
		}
	}
	_, err = g.Batch(150, crossBatch(rng, basis, 128, 1, 32))
	a, ok := err.(*Alarm)
	if !ok || !strings.Contains(a.Error(), "passive party telco is suspected") {
		t.Fatalf("noise on telco's block: %v", err)
	}
}

// TestCrossPartyTwoParties: with two parties each block is reconstructed
// from the other alone, so noise on party 2's rows raises both parties'
// scores: the detector sees the disagreement (its score rises past 15
// from below 5 on honest batches) and cannot say whose it is.
func TestCrossPartyTwoParties(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	basis := threeBases[:2]
	c := &crossParty{}
	if err := c.SetBlocks([]string{"p1", "p2"}, [][2]int{{0, 4}, {4, 7}}); err != nil {
		t.Fatal(err)
	}
	for step := range 200 {
		if s := c.Observe(int64(step), crossBatch(rng, basis, 128, -1, 0)); step >= 150 && s >= 5 {
			t.Errorf("honest batch %d scored %g", step, s)
		}
	}
	c.Observe(200, crossBatch(rng, basis, 128, 1, 32))
	ps := c.PartyScores()
	t.Logf("party scores with party 2 noisy on 32 rows: %v", ps)
	if ps[0] < 15 || ps[1] < 15 {
		t.Errorf("party scores %v, want both ≥ 15", ps)
	}
}

// TestCrossPartySteadyOutliers: when a tenth of every batch's rows are
// outliers from the start (party 3's block noise on 13 of 128 rows, every
// batch), they are the run's normal, and no batch scores 5 or more after
// training. The pair statistic's history covers every row, as the
// batch's own statistic does: a history over the inlier rows only (an
// earlier version) sat below every batch, and its largest score here was
// 8.24.
func TestCrossPartySteadyOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	c := &crossParty{}
	if err := c.SetBlocks([]string{"p1", "p2", "p3"}, [][2]int{{0, 4}, {4, 7}, {7, 11}}); err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for step := range 200 {
		s := c.Observe(int64(step), crossBatch(rng, threeBases, 128, 2, 13))
		if step >= 100 {
			worst = max(worst, s)
		}
	}
	t.Logf("largest score over batches 100–199: %.2f", worst)
	if worst >= 5 {
		t.Errorf("a steady share of outlier rows scored %.2f", worst)
	}
}
