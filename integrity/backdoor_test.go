package integrity

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// grFeatures is a 6-row table of two dense columns, row r = (r+1, 10(r+1)),
// IDs 10…15.
func grFeatures() ([]uint64, *data.Features) {
	f := &data.Features{Rows: 6, NumDense: 2, Dense: make([]float32, 12)}
	ids := make([]uint64, 6)
	for r := range 6 {
		ids[r] = uint64(10 + r)
		f.Dense[2*r], f.Dense[2*r+1] = float32(r+1), float32(10*(r+1))
	}
	return ids, f
}

// grBatch gathers the rows of grFeatures' table f with the given IDs
// into a batch.
func grBatch(f *data.Features, ids []uint64) *data.Batch {
	b := &data.Batch{}
	rows := make([]int, len(ids))
	for i, id := range ids {
		rows[i] = int(id - 10)
	}
	f.Gather(rows, b)
	return b
}

// mat is a rows×cols matrix of the given values.
func mat(rows, cols int, v ...float32) *tensor.Matrix {
	m := tensor.New(rows, cols)
	copy(m.Data, v)
	return m
}

// TestGradientReplacementArithmetic follows, under the fixed pairing, the
// attack on hand-built batches: the target row carries its paired
// poisoned row's features with the trigger in the last column, the
// poisoned row the trigger, and the poisoned row's gradient becomes γ
// times the target row's, in the same batch and in a later one; before
// From nothing changes.
func TestGradientReplacementArithmetic(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("gradient_replacement", BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f,
		From: 2, Poison: 0.1, Amplify: 4, TriggerValue: -7, Pairing: PairingFixed, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	gr := bd.(*gradientReplacement)
	var j uint64
	for _, id := range ids {
		if gr.Poisoned(id) {
			if j != 0 {
				t.Fatalf("two poisoned rows (%d, %d); a share of 0.1 of 6 rounds to 1", j, id)
			}
			j = id
		}
	}
	if j == 0 || j == 10 {
		t.Fatalf("poisoned row %d, want one of 11…15", j)
	}
	other := uint64(11)
	if other == j {
		other = 12
	}
	batchOf := func(rowIDs ...uint64) *data.Batch { return grBatch(f, rowIDs) }
	jv := float32(j - 9) // row j's first column

	// Before From: features, embedding and gradient are left alone.
	b := batchOf(10, j, other)
	want := slices.Clone(b.Dense.Data)
	if err := bd.Features(1, []uint64{10, j, other}, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Dense.Data, want) {
		t.Errorf("before From: features %v, want %v", b.Dense.Data, want)
	}

	b = batchOf(10, j, other)
	batch := []uint64{10, j, other}
	if err := bd.Features(2, batch, b); err != nil {
		t.Fatal(err)
	}
	ov := float32(other - 9)
	want = []float32{jv, -7, jv, -7, ov, 10 * ov}
	if !slices.Equal(b.Dense.Data, want) {
		t.Errorf("features %v, want %v", b.Dense.Data, want)
	}
	g := mat(3, 2, 1, 2, 3, 4, 5, 6)
	got, err := bd.Gradient(2, batch, g)
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 2, 4, 8, 5, 6}; !slices.Equal(got.Data, w) {
		t.Errorf("gradient %v, want %v", got.Data, w)
	}
	if w := []float32{1, 2, 3, 4, 5, 6}; !slices.Equal(g.Data, w) {
		t.Errorf("the received gradient was changed: %v", g.Data)
	}
	// A later batch with the poisoned row and without the target row: the
	// target row's last gradient, amplified.
	got, err = bd.Gradient(3, []uint64{other, j}, mat(2, 2, 9, 9, 9, 9))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{9, 9, 4, 8}; !slices.Equal(got.Data, w) {
		t.Errorf("later gradient %v, want %v", got.Data, w)
	}
	// Test time: every row's last column is the trigger.
	b = batchOf(11, 12)
	bd.TriggerFeatures(b)
	if w := []float32{2, -7, 3, -7}; !slices.Equal(b.Dense.Data, w) {
		t.Errorf("test trigger %v, want %v", b.Dense.Data, w)
	}
}

// TestBackdoorConfigErrors: bad settings are refused with what is wrong.
func TestBackdoorConfigErrors(t *testing.T) {
	ids, f := grFeatures()
	ok := BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f}
	for _, tc := range []struct {
		name, attack string
		change       func(c *BackdoorConfig)
	}{
		{"unknown", "nope", func(*BackdoorConfig) {}},
		{"no known rows", "villain", func(c *BackdoorConfig) { c.Known = nil }},
		{"negative from", "villain", func(c *BackdoorConfig) { c.From = -1 }},
		{"poison share 1", "gradient_replacement", func(c *BackdoorConfig) { c.Poison = 1 }},
		{"NaN amplification", "villain", func(c *BackdoorConfig) { c.Amplify = math.NaN() }},
		{"no training rows", "gradient_replacement", func(c *BackdoorConfig) { c.Train = nil }},
		{"unknown pairing", "gradient_replacement", func(c *BackdoorConfig) { c.Pairing = "nope" }},
	} {
		c := ok
		tc.change(&c)
		if _, err := NewBackdoor(tc.attack, c); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	for _, name := range BackdoorNames() {
		if _, err := NewBackdoor(name, ok); err != nil {
			t.Errorf("%s with good settings: %v", name, err)
		}
	}
}

// TestVillainTriggerByHand: after honest batches whose column standard
// deviations are known, the trigger is β·δ·(+, +, −, −) on the four of
// eight columns with the largest deviation, δ their mean deviation (two
// pass, here), both at test time and on a known row in training (dropout
// and shifting off).
func TestVillainTriggerByHand(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("villain", BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f, From: 3, Amplify: 2})
	if err != nil {
		t.Fatal(err)
	}
	v := bd.(*villain)
	v.dropout, v.low, v.high = 0, 1, 1
	// Column c has scale s[c]: the largest are 1, 3, 4 and 6.
	scale := []float64{5, 9, 1, 8, 7, 2, 6, 3}
	rng := rand.New(rand.NewPCG(4, 5))
	var seen [][]float32
	for step := range 3 {
		e := tensor.New(20, 8)
		for i := range e.Data {
			e.Data[i] = float32(scale[i%8] * rng.NormFloat64())
		}
		for r := range 20 {
			seen = append(seen, slices.Clone(e.Data[r*8:(r+1)*8]))
		}
		out, err := bd.Send(int64(step), make([]uint64, 20), e) // ID 0: an unknown row
		if err != nil {
			t.Fatal(err)
		}
		_, _ = bd.Gradient(int64(step), make([]uint64, 20), tensor.New(20, 8))
		_ = out
	}
	sd := make([]float64, 8)
	for c := range 8 {
		m := 0.0
		for _, r := range seen {
			m += float64(r[c])
		}
		m /= float64(len(seen))
		s := 0.0
		for _, r := range seen {
			s += (float64(r[c]) - m) * (float64(r[c]) - m)
		}
		sd[c] = math.Sqrt(s / float64(len(seen)-1))
	}
	mask := []int{1, 3, 4, 6}
	delta := (sd[1] + sd[3] + sd[4] + sd[6]) / 4
	sign := []float64{1, 1, -1, -1}
	wantRow := make([]float64, 8)
	for k, c := range mask {
		wantRow[c] = 2 * delta * sign[k]
	}
	e := tensor.New(2, 8)
	bd.TriggerEmbedding(e)
	for i, x := range e.Data {
		if w := wantRow[i%8]; math.Abs(float64(x)-w) > 1e-4*math.Max(1, math.Abs(w)) {
			t.Fatalf("test trigger column %d: %g, want %g", i%8, x, w)
		}
	}
	// A known row (ID 10) at step 3 gets the same trigger on its embedding.
	in := mat(2, 8, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2)
	out, err := bd.Send(3, []uint64{10, 0}, in)
	if err != nil {
		t.Fatal(err)
	}
	for c := range 8 {
		if got, w := float64(out.Data[c]), 1+wantRow[c]; math.Abs(got-w) > 1e-3 {
			t.Errorf("poisoned row column %d: %g, want %g", c, got, w)
		}
		if out.Data[8+c] != 2 {
			t.Errorf("unknown row column %d changed: %g", c, out.Data[8+c])
		}
	}
}

// TestVillainLabelInference: in a batch holding a known target row,
// the undecided rows are sent with that row's embedding; a row whose
// gradient points the way the known row's does (positive dot product)
// joins the target group, one pointing against it does not, one with a
// zero gradient is tried again later. The gradients are built as a
// single-logit top gives them: (p − y)·v for one v shared by the rows
// carrying one embedding.
func TestVillainLabelInference(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("villain", BackdoorConfig{Known: []uint64{1}, TrainIDs: ids, Train: f, From: 100, Poison: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	// No target row in the batch: nothing is swapped.
	out, err := bd.Send(0, []uint64{2, 3}, mat(2, 2, 1, 1, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 1, 2, 2}; !slices.Equal(out.Data, w) {
		t.Errorf("without a target row sent %v, want the honest %v", out.Data, w)
	}
	if _, err := bd.Gradient(0, []uint64{2, 3}, mat(2, 2, 1, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	// Row 1 (known) is in the batch: rows 2, 3 and 4 carry its embedding.
	batch := []uint64{2, 1, 3, 4}
	out, err = bd.Send(1, batch, mat(4, 2, 5, 5, 7, 8, 6, 6, 9, 9))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{7, 8, 7, 8, 7, 8, 7, 8}; !slices.Equal(out.Data, w) {
		t.Errorf("swap step sent %v, want the known row's embedding in every row %v", out.Data, w)
	}
	// v = (0.5, −1); the known row (y = 1, p = 0.3) gets −0.7·v; row 2
	// (y = 1, p = 0.9) −0.1·v; row 3 (y = 0, p = 0.2) 0.2·v; row 4 a zero
	// gradient (a dead unit).
	g := mat(4, 2, -0.05, 0.1, -0.35, 0.7, 0.1, -0.2, 0, 0)
	if _, err := bd.Gradient(1, batch, g); err != nil {
		t.Fatal(err)
	}
	if got, w := bd.(*villain).Inferred(), []uint64{1, 2}; !slices.Equal(got, w) {
		t.Errorf("target rows %v, want %v", got, w)
	}
	// Rows 2 and 3 are decided; row 4 is tried again, with row 2 (now of
	// the group) as the reference.
	out, err = bd.Send(2, []uint64{3, 4, 2}, mat(3, 2, 1, 1, 2, 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 1, 3, 4, 3, 4}; !slices.Equal(out.Data, w) {
		t.Errorf("retry step sent %v, want %v", out.Data, w)
	}
	if _, err := bd.Gradient(2, []uint64{3, 4, 2}, mat(3, 2, 0, 0, 1, 1, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if got, w := bd.(*villain).Inferred(), []uint64{1, 2, 4}; !slices.Equal(got, w) {
		t.Errorf("target rows after the retry %v, want %v", got, w)
	}
}

// TestVillainPoisonBudget: only the first ⌈share·n⌉ rows of the target
// group (the known rows first) get the trigger, and inference stops once
// the group fills the budget.
func TestVillainPoisonBudget(t *testing.T) {
	ids, f := grFeatures() // 6 training rows: a share of 0.3 is 2 rows
	bd, err := NewBackdoor("villain", BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f, From: 2, Poison: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	v := bd.(*villain)
	v.dropout, v.low, v.high = 0, 1, 1
	if _, err := bd.Send(0, []uint64{10, 11, 12}, mat(3, 1, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	// 11 and 12 point the known row's way: both join; the budget is 2.
	if _, err := bd.Gradient(0, []uint64{10, 11, 12}, mat(3, 1, -1, -2, -3)); err != nil {
		t.Fatal(err)
	}
	if got, w := v.Inferred(), []uint64{10, 11, 12}; !slices.Equal(got, w) {
		t.Fatalf("target rows %v, want %v", got, w)
	}
	if !v.poison[10] || !v.poison[11] || v.poison[12] {
		t.Errorf("poisoned %v, want rows 10 and 11", v.poison)
	}
	// The group fills the budget: row 13 is sent as it is.
	out, err := bd.Send(1, []uint64{10, 13}, mat(2, 1, 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 5}; !slices.Equal(out.Data, w) {
		t.Errorf("after the budget sent %v, want %v", out.Data, w)
	}
}

// TestOutlierDetectorCountsShiftedRows: after the warm-up on standard
// normal batches, a batch with k rows shifted by 6 in every column scores
// k/rows (an honest row's mean squared z over 16 columns exceeds 4 with
// probability < 1e-7); the warm-up batches score 0.
func TestOutlierDetectorCountsShiftedRows(t *testing.T) {
	d, err := NewDetector("outlier")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 7))
	for step := range outlierWarmup {
		if s := d.Observe(int64(step), randBatch(rng, 64, 16)); s != 0 {
			t.Fatalf("warm-up batch %d scored %g", step, s)
		}
	}
	for i, k := range []int{0, 1, 5, 20} {
		e := randBatch(rng, 64, 16)
		for r := range k {
			for c := range 16 {
				e.Data[r*16+c] += 6
			}
		}
		if got, w := d.Observe(int64(outlierWarmup+i), e), float64(k)/64; got != w {
			t.Errorf("%d shifted rows: score %g, want %g", k, got, w)
		}
	}
}

// TestOutlierMomentsArePooled: over the warm-up the running moments are
// the pooled mean and variance of the batches (equal sizes), computed
// here in two passes.
func TestOutlierMomentsArePooled(t *testing.T) {
	o := &rowHistory{}
	rng := rand.New(rand.NewPCG(8, 9))
	var all []float64
	for range 4 {
		e := randBatch(rng, 10, 1)
		for i := range e.Data {
			e.Data[i] = e.Data[i]*3 + 2
			all = append(all, float64(e.Data[i]))
		}
		o.scores(e)
	}
	m, v := 0.0, 0.0
	for _, x := range all {
		m += x
	}
	m /= float64(len(all))
	for _, x := range all {
		v += (x - m) * (x - m)
	}
	v /= float64(len(all))
	if math.Abs(o.mean[0]-m) > 1e-9 || math.Abs(o.vr[0]-v) > 1e-9 {
		t.Errorf("moments %g, %g; want %g, %g", o.mean[0], o.vr[0], m, v)
	}
}

// TestDryRunChangesNothing: a dry run sends the honest features,
// embedding and gradient, while its trigger is the one the attack would
// use after the same honest embeddings.
func TestDryRunChangesNothing(t *testing.T) {
	ids, f := grFeatures()
	c := BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f, Poison: 0.3, DryRun: true}
	gr, err := NewBackdoor("gradient_replacement", c)
	if err != nil {
		t.Fatal(err)
	}
	b := &data.Batch{}
	f.Gather([]int{0, 1, 2, 3, 4, 5}, b)
	if err := gr.Features(0, ids, b); err != nil || !slices.Equal(b.Dense.Data, f.Dense) {
		t.Errorf("dry gradient replacement changed the features: %v (%v)", b.Dense.Data, err)
	}
	g := mat(6, 1, 1, 2, 3, 4, 5, 6)
	if out, _ := gr.Gradient(0, ids, g); out != g {
		t.Errorf("dry gradient replacement changed the gradient: %v", out.Data)
	}

	dry, err := NewBackdoor("villain", c)
	if err != nil {
		t.Fatal(err)
	}
	c.DryRun = false
	attack, err := NewBackdoor("villain", c)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 3 {
		e := randBatch(rng, 6, 4)
		if out, _ := dry.Send(int64(step), ids, e); out != e {
			t.Fatalf("step %d: the dry run sent another embedding", step)
		}
		if _, err := attack.Send(int64(step), ids, e); err != nil {
			t.Fatal(err)
		}
	}
	a, b2 := tensor.New(1, 4), tensor.New(1, 4)
	dry.TriggerEmbedding(a)
	attack.TriggerEmbedding(b2)
	if !slices.Equal(a.Data, b2.Data) || slices.Equal(a.Data, make([]float32, 4)) {
		t.Errorf("dry trigger %v, the attack's %v", a.Data, b2.Data)
	}
}

// TestVillainTriggerOfRecentBatches: the trigger's columns and δ are of
// the honest embeddings of the last 20 batches only. Five early batches
// in which column 0 varies a hundredfold more than any other, then 20
// batches in which only columns 2, 5, 6 and 7 vary (with deviation 1,
// 2, 3 and 4 by construction: each column is ±s in equal halves) give
// the mask {2, 5, 6, 7} and δ the mean of their two-pass deviations,
// computed here.
func TestVillainTriggerOfRecentBatches(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("villain", BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f, From: 25, Amplify: 1})
	if err != nil {
		t.Fatal(err)
	}
	scale := map[int]float32{2: 1, 5: 2, 6: 3, 7: 4}
	for step := range 25 {
		e := tensor.New(10, 8)
		for r := range 10 {
			sign := float32(1 - 2*(r%2))
			if step < 5 {
				e.Data[r*8] = 100 * sign
				continue
			}
			for c, s := range scale {
				e.Data[r*8+c] = s * sign
			}
		}
		if _, err := bd.Send(int64(step), make([]uint64, 10), e); err != nil {
			t.Fatal(err)
		}
	}
	// 200 rows of ±s: the sample deviation is s·√(200/199).
	delta := (1.0 + 2 + 3 + 4) / 4 * math.Sqrt(200.0/199)
	want := []float64{0, 0, delta, 0, 0, delta, -delta, -delta}
	e := tensor.New(1, 8)
	bd.TriggerEmbedding(e)
	for c, x := range e.Data {
		if math.Abs(float64(x)-want[c]) > 1e-5 {
			t.Fatalf("trigger %v, want %v", e.Data, want)
		}
	}
}

// TestGradientReplacementUnpairedRows: under the fixed pairing, with one known target row and two
// poisoned rows, the poisoned row the target was not paired with gets γ
// times the target's gradient too (before any target gradient is kept it
// keeps its own).
func TestGradientReplacementUnpairedRows(t *testing.T) {
	ids, f := grFeatures()
	bd, err := NewBackdoor("gradient_replacement", BackdoorConfig{Known: []uint64{10}, TrainIDs: ids, Train: f,
		Poison: 0.34, Amplify: 2, Pairing: PairingFixed, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	gr := bd.(*gradientReplacement)
	var poisoned []uint64
	for _, id := range ids {
		if gr.Poisoned(id) {
			poisoned = append(poisoned, id)
		}
	}
	if len(poisoned) != 2 {
		t.Fatalf("poisoned rows %v, want two (0.34 of 6)", poisoned)
	}
	// Before a target gradient is kept: the poisoned rows keep their own.
	got, err := bd.Gradient(0, poisoned, mat(2, 2, 1, 1, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{1, 1, 2, 2}; !slices.Equal(got.Data, w) {
		t.Errorf("before any target gradient: %v, want %v", got.Data, w)
	}
	b := &data.Batch{}
	f.Gather([]int{0, int(poisoned[0] - 10), int(poisoned[1] - 10)}, b)
	batch := []uint64{10, poisoned[0], poisoned[1]}
	if err := bd.Features(1, batch, b); err != nil {
		t.Fatal(err)
	}
	got, err = bd.Gradient(1, batch, mat(3, 2, 3, -1, 5, 5, 7, 7))
	if err != nil {
		t.Fatal(err)
	}
	if w := []float32{3, -1, 6, -2, 6, -2}; !slices.Equal(got.Data, w) {
		t.Errorf("gradient %v, want %v: both poisoned rows 2 × the target's", got.Data, w)
	}
}

// TestTriggerByHand: gradient replacement's feature trigger, written out
// by hand. A party with categorical columns: of its three, the last two
// are set to their rarest training ids (column 1 holds 7 ×3, 5 ×1, 9 ×1:
// 5, the smaller of the two held once; column 2 holds 3 ×2, 8 ×1, 2 ×1:
// 2), its dense columns and its first categorical column keep the row's
// values, unless a stripe value is given (then the stripe too). A party
// with dense columns only: the last three of five become v, 0, v. The
// other row is untouched.
func TestTriggerByHand(t *testing.T) {
	f := &data.Features{Rows: 5, NumCat: 3, Cat: []int32{
		1, 7, 3,
		1, 7, 3,
		1, 9, 8,
		1, 5, 2,
		1, 7, 3}}
	f.Cardinality = []int{2, 10, 10}
	tr := newFeatureTrigger(f, 0)
	b := &data.Batch{Rows: 2, Dense: mat(2, 2, .1, .2, .3, .4), Cat: []int32{1, 7, 3, 0, 9, 8}}
	tr.apply(b, 1)
	if w := []int32{1, 7, 3, 0, 5, 2}; !slices.Equal(b.Cat, w) {
		t.Errorf("categorical %v, want %v", b.Cat, w)
	}
	if w := []float32{.1, .2, .3, .4}; !slices.Equal(b.Dense.Data, w) {
		t.Errorf("dense %v, want %v unchanged", b.Dense.Data, w)
	}
	// A stripe value given: the stripe too (two dense columns: the last one v).
	both := newFeatureTrigger(f, 3)
	both.apply(b, 0)
	if w := []float32{.1, 3, .3, .4}; !slices.Equal(b.Dense.Data, w) {
		t.Errorf("dense with a stripe value %v, want %v", b.Dense.Data, w)
	}
	if w := []int32{1, 5, 2, 0, 5, 2}; !slices.Equal(b.Cat, w) {
		t.Errorf("categorical with a stripe value %v, want %v", b.Cat, w)
	}

	dense := newFeatureTrigger(&data.Features{Rows: 1, NumDense: 5, Dense: make([]float32, 5)}, 0.75)
	b = &data.Batch{Rows: 2, Dense: mat(2, 5, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95)}
	dense.apply(b, 1)
	if w := []float32{.1, .2, .3, .4, .5, .6, .7, .75, 0, .75}; !slices.Equal(b.Dense.Data, w) {
		t.Errorf("dense %v, want %v", b.Dense.Data, w)
	}
}
