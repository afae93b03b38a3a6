package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// smallWDL is a Wide&Deep split small enough for finite differences.
func smallWDL(t testing.TB, seed uint64) (*DeepBottom, *DeepTop, Schema) {
	t.Helper()
	s := Schema{Cardinality: []int{5, 3, 7}, NumDense: 2}
	cfg := Config{Widths: []int{8, 6, 5, 4}, Cut: 2, EmbDim: 3, L2: 0.05, LR: 1e-2, EmbInit: 0.5, Seed: seed}
	b, top, err := NewWideDeep(cfg, s, s)
	if err != nil {
		t.Fatal(err)
	}
	return b, top, s
}

// randomBatch draws ids uniformly and dense values in [0, 1).
func randomBatch(r *rand.Rand, s Schema, rows int) *data.Batch {
	b := &data.Batch{Rows: rows, Cat: make([]int32, rows*len(s.Cardinality)), Dense: tensor.New(rows, s.NumDense)}
	for i := range b.Cat {
		b.Cat[i] = int32(r.IntN(s.Cardinality[i%len(s.Cardinality)]))
	}
	for i := range b.Dense.Data {
		b.Dense.Data[i] = float32(r.Float64())
	}
	return b
}

func labelsFor(r *rand.Rand, n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = float32(r.IntN(2))
	}
	return y
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSplitGradients checks, by central differences of the whole split
// model's BCE loss, the gradient at the cut (∂L/∂e), at the first passive
// layer's output, at the deep embeddings (with their L2 term), at the
// wide embeddings, and Backprop's agreement with Backward.
func TestSplitGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1))
	bot, top, s := smallWDL(t, 7)
	// Zero biases put a row whose layer input is all zero exactly on a
	// ReLU kink, where a central difference sees half the slope; small
	// positive biases keep every pre-activation off 0.
	for _, ps := range [][]*nn.Param{bot.params, top.params} {
		for _, p := range ps {
			if p.Name == "dense.b" {
				for i := range p.W.Data {
					p.W.Data[i] = float32(0.05 + 0.1*r.Float64())
				}
			}
		}
	}
	const B = 6
	in := randomBatch(r, s, B)
	wide := randomBatch(r, s, B)
	y := labelsFor(r, B)
	d := make([]float32, B)
	bce := func(logits []float32) float64 {
		l, err := nn.SigmoidBCE(logits, y, make([]float32, B))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	e := must(bot.Forward(in))
	logits := must(top.Forward(e, wide))
	if _, err := nn.SigmoidBCE(logits, y, d); err != nil {
		t.Fatal(err)
	}
	gCut := must(top.Backward(d)).Clone()
	grads := must(bot.Backward(gCut))
	if len(grads) != 2 || grads[1] != gCut {
		t.Fatalf("Backward returned %d gradients; want 2 with the cut gradient last", len(grads))
	}
	gFirst := grads[0].Clone()

	embGrad := map[[2]int][]float32{}
	emb := bot.Embedding()
	for f, c := range s.Cardinality {
		for k := range c {
			if g := emb.Grad(f, k); g != nil {
				embGrad[[2]int{f, k}] = append([]float32(nil), g...)
			}
		}
	}
	wideGrad := map[[2]int][]float32{}
	for f, c := range s.Cardinality {
		for k := range c {
			if g := top.WideEmbedding().Grad(f, k); g != nil {
				wideGrad[[2]int{f, k}] = append([]float32(nil), g...)
			}
		}
	}
	aud := must(bot.Backprop(gCut))
	if !equalM(aud[0], gFirst) {
		t.Error("Backprop's first-layer gradient differs from Backward's")
	}

	tol := gradcheck.Tol{Rel: 2e-2, Floor: 2e-2}
	// ∂L/∂e: perturb the cut embedding, rerun only the top.
	eFixed := e.Clone()
	lossTop := func() float64 { return bce(must(top.Forward(eFixed, wide))) }
	if err := gradcheck.Check("∂L/∂e", lossTop, eFixed.Data, gCut.Data, nil, 1e-3, tol); err != nil {
		t.Error(err)
	}
	// ∂L/∂(first layer output): perturb it, rerun the passive layers after it and the top.
	must(bot.Forward(in))
	h1 := bot.Outputs()[0].Clone()
	lossFirst := func() float64 {
		bot.forwardFrom(1, h1)
		return bce(must(top.Forward(bot.Outputs()[1], wide)))
	}
	if err := gradcheck.Check("∂L/∂h1", lossFirst, h1.Data, gFirst.Data, nil, 1e-3, tol); err != nil {
		t.Error(err)
	}
	// Deep embeddings: the full forward, plus the L2 term over touched rows.
	lossEmb := func() float64 {
		return bce(must(top.Forward(must(bot.Forward(in)), wide))) + emb.RegLoss() + top.WideEmbedding().RegLoss()
	}
	for key, g := range embGrad {
		if err := gradcheck.Check("deep embedding", lossEmb, emb.Weight(key[0], key[1]), g, nil, 1e-3, tol); err != nil {
			t.Errorf("field %d id %d: %v", key[0], key[1], err)
		}
	}
	for key, g := range wideGrad {
		if err := gradcheck.Check("wide embedding", lossEmb, top.WideEmbedding().Weight(key[0], key[1]), g, nil, 1e-3, tol); err != nil {
			t.Errorf("field %d id %d: %v", key[0], key[1], err)
		}
	}
	if len(embGrad) == 0 || len(wideGrad) == 0 {
		t.Fatal("no embedding gradients to check")
	}
	// Every dense parameter of both sides.
	must(bot.Forward(in))
	must(top.Forward(must(bot.Forward(in)), wide))
	for side, ps := range map[string][]*nn.Param{"passive": bot.params, "active": top.params} {
		for i, p := range ps {
			g := p.G.Clone()
			if err := gradcheck.Check(p.Name, lossEmb, p.W.Data, g.Data, nil, 1e-3, tol); err != nil {
				t.Errorf("%s param %d: %v", side, i, err)
			}
		}
	}
}

func equalM(a, b *tensor.Matrix) bool {
	if !tensor.SameShape(a, b) {
		return false
	}
	for i := range a.Data {
		if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
			return false
		}
	}
	return true
}

// train runs n split steps on batches drawn from r and returns the last logits.
func train(t testing.TB, bot Bottom, top Top, s Schema, r *rand.Rand, n int) []float32 {
	var logits []float32
	for range n {
		in := randomBatch(r, s, 16)
		y := labelsFor(r, 16)
		e := must(bot.Forward(in))
		logits = must(top.Forward(e, in))
		d := make([]float32, len(logits))
		if _, err := nn.SigmoidBCE(logits, y, d); err != nil {
			t.Fatal(err)
		}
		g := must(top.Backward(d))
		must(bot.Backward(g))
		if err := top.Step(); err != nil {
			t.Fatal(err)
		}
		if err := bot.Step(); err != nil {
			t.Fatal(err)
		}
	}
	return append([]float32(nil), logits...)
}

func TestDeterministicForSeed(t *testing.T) {
	b1, t1, s := smallWDL(t, 3)
	b2, t2, _ := smallWDL(t, 3)
	b3, _, _ := smallWDL(t, 4)
	if !equalM(b1.dense[0].W, b2.dense[0].W) || equalM(b1.dense[0].W, b3.dense[0].W) {
		t.Fatal("initial weights do not follow the seed")
	}
	l1 := train(t, b1, t1, s, rand.New(rand.NewPCG(1, 2)), 5)
	l2 := train(t, b2, t2, s, rand.New(rand.NewPCG(1, 2)), 5)
	for i := range l1 {
		if math.Float32bits(l1[i]) != math.Float32bits(l2[i]) {
			t.Fatalf("logit %d: %v vs %v after identical training", i, l1[i], l2[i])
		}
	}
}

func TestCheckpointContinuesBitIdentically(t *testing.T) {
	b1, t1, s := smallWDL(t, 5)
	pcg := rand.NewPCG(9, 9)
	r := rand.New(pcg)
	train(t, b1, t1, s, r, 3)
	var bb, tb bytes.Buffer
	if err := b1.Save(&bb); err != nil {
		t.Fatal(err)
	}
	if err := t1.Save(&tb); err != nil {
		t.Fatal(err)
	}
	pcgCopy := *pcg // the batch stream continues identically for both
	want := train(t, b1, t1, s, r, 4)

	b2, t2, _ := smallWDL(t, 99) // different init, overwritten by Load
	if err := b2.Load(bytes.NewReader(bb.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := t2.Load(bytes.NewReader(tb.Bytes())); err != nil {
		t.Fatal(err)
	}
	if b2.opt.T != 3 || b2.embOpt.T != 3 || t2.opt.T != 3 {
		t.Errorf("restored step counts %d %d %d, want 3", b2.opt.T, b2.embOpt.T, t2.opt.T)
	}
	got := train(t, b2, t2, s, rand.New(&pcgCopy), 4)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d after restore: %v, want %v", i, got[i], want[i])
		}
	}
	if !equalM(b1.dense[1].W, b2.dense[1].W) || !bytesEqual(b1.emb.Store(), b2.emb.Store()) {
		t.Error("parameters differ after identical continued training")
	}
}

func bytesEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func TestCheckpointRejectsMismatch(t *testing.T) {
	b1, t1, s := smallWDL(t, 5)
	var bb, tb bytes.Buffer
	if err := b1.Save(&bb); err != nil {
		t.Fatal(err)
	}
	if err := t1.Save(&tb); err != nil {
		t.Fatal(err)
	}
	other, _, err := NewMLP(Config{Widths: []int{8, 6, 5, 4}, Cut: 2, EmbDim: 2, Seed: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"other embedding dim", other.Load(bytes.NewReader(bb.Bytes())), "section"},
		{"top into bottom", b1.Load(bytes.NewReader(tb.Bytes())), "holds a top model"},
		{"truncated", b1.Load(bytes.NewReader(bb.Bytes()[:bb.Len()-3])), "unexpected EOF"},
		{"not a checkpoint", b1.Load(strings.NewReader("hello world, not a model")), "not a splitguard"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, tc.err, tc.want)
		}
	}
}

func TestBoundaryValidation(t *testing.T) {
	bot, top, s := smallWDL(t, 1)
	r := rand.New(rand.NewPCG(3, 3))
	in := randomBatch(r, s, 4)
	if _, err := bot.Backward(tensor.New(4, 6)); err == nil || !strings.Contains(err.Error(), "before any Forward") {
		t.Errorf("Backward before Forward: %v", err)
	}
	e := must(bot.Forward(in))
	nanG := tensor.New(4, 6)
	nanG.Set(2, 3, float32(math.NaN()))
	infE := e.Clone()
	infE.Set(1, 0, float32(math.Inf(1)))
	badID := randomBatch(r, s, 4)
	badID.Cat[4] = 3 // row 1, field 1 has cardinality 3
	nanDense := randomBatch(r, s, 4)
	nanDense.Dense.Set(3, 1, float32(math.NaN()))
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"gCut wrong shape", second(bot.Backward(tensor.New(4, 4))), "cut gradient is 4×4, want 4×6"},
		{"gCut wrong rows", second(bot.Backward(tensor.New(3, 6))), "cut gradient is 3×6"},
		{"gCut NaN", second(bot.Backward(nanG)), "row 2, column 3"},
		{"backprop NaN", second(bot.Backprop(nanG)), "non-finite"},
		{"nil gCut", second(bot.Backward(nil)), "cut gradient"},
		{"id out of range", second(bot.Forward(badID)), "field 1, batch row 1: id 3 outside [0, 3)"},
		{"NaN dense", second(bot.Forward(nanDense)), "row 3, column 1"},
		{"short batch", second(bot.Forward(&data.Batch{Rows: 4, Cat: in.Cat[:5], Dense: in.Dense})), "5 categorical ids"},
		{"e wrong width", second(top.Forward(tensor.New(4, 3), in)), "4×3, want B×6"},
		{"e Inf", second(top.Forward(infE, in)), "row 1, column 0"},
		{"wide missing", second(top.Forward(e, nil)), "nil batch"},
		{"wide rows", second(top.Forward(e, randomBatch(r, s, 3))), "3 rows of wide features"},
		{"Step before Backward", bot.Step(), "without a Backward"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, tc.err, tc.want)
		}
	}
	must(top.Forward(e, in))
	if _, err := top.Backward(make([]float32, 3)); err == nil || !strings.Contains(err.Error(), "3 logit gradients for a batch of 4") {
		t.Errorf("short dLogits: %v", err)
	}
	if _, err := top.Backward([]float32{0, float32(math.Inf(-1)), 0, 0}); err == nil {
		t.Error("Inf logit gradient accepted")
	}
	_, mlpTop, _ := NewMLP(Config{Widths: []int{4, 5}, Cut: 1}, s)
	if _, err := mlpTop.Forward(tensor.New(2, 4), in); err == nil || !strings.Contains(err.Error(), "no wide part") {
		t.Errorf("MLP top given wide features: %v", err)
	}
	for _, cfg := range []Config{{Widths: []int{4}, Cut: 2}, {Widths: []int{4, 0}}, {Widths: []int{}}} {
		if _, err := NewBottom(cfg, s); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestLearns checks that training reduces the loss on a rule the model
// can represent: the label is set by field 0's id, which only the passive
// side's deep embeddings see (the MLP top has no wide part).
func TestLearns(t *testing.T) {
	s := Schema{Cardinality: []int{6, 4}, NumDense: 1}
	bot, top, err := NewMLP(Config{Widths: []int{16, 16, 8}, Cut: 2, LR: 1e-2, Seed: 2}, s)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(4, 4))
	const B = 64
	d := make([]float32, B)
	y := make([]float32, B)
	var first, last float64
	for step := range 300 {
		in := randomBatch(r, s, B)
		for i := range B {
			y[i] = float32(in.Cat[i*2] % 2)
		}
		logits := must(top.Forward(must(bot.Forward(in)), nil))
		loss := must(nn.SigmoidBCE(logits, y, d))
		if step < 10 {
			first += loss / 10
		} else if step >= 290 {
			last += loss / 10
		}
		must(bot.Backward(must(top.Backward(d))))
		if err := top.Step(); err != nil {
			t.Fatal(err)
		}
		if err := bot.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if !(last < 0.2 && first > 0.5) {
		t.Errorf("mean loss went from %.3f to %.3f; want from > 0.5 (chance ≈ ln 2) to < 0.2", first, last)
	}
}

func TestOutputsAndDefaults(t *testing.T) {
	s := Schema{Cardinality: []int{10, 10}, NumDense: 3}
	bot, top, err := NewWideDeep(Config{}, s, s)
	if err != nil {
		t.Fatal(err)
	}
	c := bot.Config()
	if len(c.Widths) != 6 || c.Cut != 3 || c.EmbDim != 4 || c.L2 != 0.01 || c.LR != 1e-4 {
		t.Errorf("defaults %+v", c)
	}
	if bot.CutDim() != 128 || top.CutDim() != 128 || len(top.dense) != 3 {
		t.Errorf("cut dim %d/%d, top layers %d", bot.CutDim(), top.CutDim(), len(top.dense))
	}
	r := rand.New(rand.NewPCG(1, 1))
	in := randomBatch(r, s, 5)
	e := must(bot.Forward(in))
	outs := bot.Outputs()
	if len(outs) != 3 || outs[2] != e || outs[0].Rows != 5 || outs[0].Cols != 128 {
		t.Errorf("Outputs: %d layers", len(outs))
	}
	if bot.dense[0].In() != 2*4+3 {
		t.Errorf("first layer input width %d, want 11", bot.dense[0].In())
	}
}
