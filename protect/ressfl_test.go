package protect

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// ressflBatch is an 8-row batch: 3-wide embeddings and 2 dense columns
// that are a function of them.
func ressflBatch(seed uint64) (*tensor.Matrix, *tensor.Matrix) {
	r := rand.New(rand.NewPCG(seed, 1))
	e, x := tensor.New(8, 3), tensor.New(8, 2)
	for i := range 8 {
		for j := range 3 {
			e.Data[i*3+j] = float32(r.NormFloat64())
		}
		x.Data[i*2] = 0.5*e.Data[i*3] - e.Data[i*3+1]
		x.Data[i*2+1] = float32(math.Tanh(float64(e.Data[i*3+2])))
	}
	return e, x
}

// TestResSFLGradientIsTaskMinusLambdaReconstruction checks ResSFL's
// defining property: the gradient the bottom receives is the task
// gradient g minus λ·∂R/∂e, with ∂R/∂e from central differences of the
// decoder's reconstruction error R(e) = (1/(B·k))·Σ‖D(e_i) − x_i‖²
// (computed here from the decoder's outputs), at the decoder's weights
// before its step; the embedding goes out unchanged and RegLoss is −λ·R.
func TestResSFLGradientIsTaskMinusLambdaReconstruction(t *testing.T) {
	const lambda = 0.7
	r, err := NewResSFL(3, 2, lambda, 1e-2, 5)
	if err != nil {
		t.Fatal(err)
	}
	e, x := ressflBatch(3)
	g := ressflTaskGradient()
	rec := func(z *tensor.Matrix) float64 { return decoderError(r, z, x) }
	r.SetFeatures(x, nil, 0)
	out, err := r.Forward(e, true)
	if err != nil {
		t.Fatal(err)
	}
	if out != e {
		t.Error("ResSFL changed the embedding it sends")
	}
	want := rec(e)
	if math.Abs(r.RegLoss()+lambda*want) > 1e-6 {
		t.Errorf("RegLoss %v, want −λ·R = %v", r.RegLoss(), -lambda*want)
	}
	got, err := r.Backward(g)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-3
	for i := range e.Data {
		p := e.Clone()
		p.Data[i] += h
		up := rec(p)
		p.Data[i] -= 2 * h
		fd := (up - rec(p)) / (2 * h)
		if w := float64(g.Data[i]) - lambda*fd; math.Abs(float64(got.Data[i])-w) > 1e-4 {
			t.Errorf("element %d: gradient %.6f, g − λ·∂R/∂e by differences %.6f", i, got.Data[i], w)
		}
	}
	// Backprop gives the same without readying a step.
	aud, err := r.Backprop(g)
	if err != nil {
		t.Fatal(err)
	}
	for i := range aud.Data {
		if aud.Data[i] != got.Data[i] {
			t.Fatalf("Backprop differs from Backward at %d", i)
		}
	}
	// Evaluation leaves everything alone.
	if out, err := r.Forward(e, false); err != nil || out != e {
		t.Errorf("evaluation forward: %v", err)
	}
}

// TestResSFLDecoderLearns: stepping the simulated decoder on one batch
// brings its reconstruction error well down (the attacker it simulates
// learns), and Step without a Backward is refused.
func TestResSFLDecoderLearns(t *testing.T) {
	r, err := NewResSFL(3, 2, 0.1, 3e-2, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Step(); err == nil {
		t.Error("Step before any Backward was accepted")
	}
	e, x := ressflBatch(4)
	g := tensor.New(8, 3)
	r.SetFeatures(x, nil, 0)
	var first float64
	for s := range 300 {
		if _, err := r.Forward(e, true); err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			first = r.Reconstruction()
		}
		if _, err := r.Backward(g); err != nil {
			t.Fatal(err)
		}
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Forward(e, true); err != nil {
		t.Fatal(err)
	}
	if last := r.Reconstruction(); last > first/10 {
		t.Errorf("reconstruction error %v after 300 steps, %v at the start: the decoder did not learn", last, first)
	}
}

// TestResSFLStateAndRefusals: the decoder's state round-trips (the next
// step's gradient is the same bit for bit); another shape, a bad λ, no
// dense column and features of another batch are refused.
func TestResSFLStateAndRefusals(t *testing.T) {
	a, _ := NewResSFL(3, 2, 0.5, 1e-2, 9)
	e, x := ressflBatch(5)
	g := tensor.New(8, 3)
	a.SetFeatures(x, nil, 0)
	for range 3 {
		if _, err := a.Forward(e, true); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Backward(g); err != nil {
			t.Fatal(err)
		}
		if err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := NewResSFL(3, 2, 0.5, 1e-2, 10)
	buf := sameAfterLoad(t, a, b, e, x, g)
	other, _ := NewResSFL(3, 4, 0.5, 1e-2, 9)
	if err := other.Load(bytes.NewReader(buf.Bytes())); err == nil || !strings.Contains(err.Error(), "3→2") {
		t.Errorf("a decoder of another shape loaded: %v", err)
	}
	for _, c := range []struct {
		d, k   int
		lambda float64
		want   string
	}{{3, 2, 0, "ressfl_lambda"}, {3, 2, math.Inf(1), "ressfl_lambda"}, {3, 0, 1, "dense columns"}} {
		if _, err := NewResSFL(c.d, c.k, c.lambda, 1e-2, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("d=%d k=%d λ=%v: %v, want an error naming %q", c.d, c.k, c.lambda, err, c.want)
		}
	}
	a.SetFeatures(tensor.New(5, 2), nil, 0)
	if _, err := a.Forward(e, true); err == nil {
		t.Error("features of 5 rows were accepted for 8 embedding rows")
	}
}

// sameAfterLoad saves a, loads it into b, and checks that both then give
// the same gradient for g on the batch (e, x); it returns the state.
func sameAfterLoad(t *testing.T, a, b *ResSFL, e, x, g *tensor.Matrix) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	b.SetFeatures(x, nil, 0)
	for _, l := range []*ResSFL{a, b} {
		if _, err := l.Forward(e, true); err != nil {
			t.Fatal(err)
		}
	}
	ga, _ := a.Backward(g)
	gb, _ := b.Backward(g)
	for i := range ga.Data {
		if ga.Data[i] != gb.Data[i] {
			t.Fatalf("after load the gradient differs at %d: %v, %v", i, gb.Data[i], ga.Data[i])
		}
	}
	return &buf
}

// ressflTaskGradient is a task gradient for ressflBatch's 8×3 embedding.
func ressflTaskGradient() *tensor.Matrix {
	g := tensor.New(8, 3)
	for i := range g.Data {
		g.Data[i] = float32(0.01 * float64(i%5-2))
	}
	return g
}

// decoderError is R = (1/(B·k))·Σ‖D(z_i) − x_i‖² of r's decoder,
// computed in float64 from its outputs.
func decoderError(r *ResSFL, z, x *tensor.Matrix) float64 {
	y := r.out.Forward(r.relu.Forward(r.enc.Forward(z)))
	var s float64
	for i, v := range y.Data {
		d := float64(v) - float64(x.Data[i])
		s += d * d
	}
	return s / float64(len(y.Data))
}
