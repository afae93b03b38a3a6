package protect

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

func newTestPassport(t *testing.T, d int, n float64, seed uint64) *Passport {
	t.Helper()
	l, err := BuildInput(Params{"fedpass_range": n}, InputOptions{CutDim: d, LR: 1e-2, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return l.(*Passport)
}

// TestPassportForwardByHand sets a 2-wide layer by hand: W = [[1 2] [3 4]],
// E = [0.5 −1]ᵀ, D = [2 −1], s_γ = (1, −1), s_β = (0, 1).
// γ: u = s_γ·W = (−2, −2), z = u·E = 1, γ = 1·D = (2, −1).
// β: u = (3, 4), z = 1.5 − 4 = −2.5, LeakyReLU = −0.025, β = (−0.05, 0.025).
// For x = (1, 1), x·W = (4, 6): out = (2·4 − 0.05, −6 + 0.025).
// For x = (1, −1), x·W = (−2, −2): out = (−4 − 0.05, 2 + 0.025).
func TestPassportForwardByHand(t *testing.T) {
	p := newTestPassport(t, 2, 1, 1)
	copy(p.w.Data, []float32{1, 2, 3, 4})
	copy(p.enc.Data, []float32{0.5, -1})
	copy(p.dec.Data, []float32{2, -1})
	copy(p.sg, []float32{1, -1})
	copy(p.sb, []float32{0, 1})
	x := tensor.New(2, 2)
	copy(x.Data, []float32{1, 1, 1, -1})
	y, err := p.Forward(x, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{7.95, -5.975, -4.05, 2.025}
	for i, w := range want {
		if math.Abs(float64(y.Data[i])-w) > 1e-5 {
			t.Errorf("out[%d] = %v, want %v", i, y.Data[i], w)
		}
	}
}

func TestPassportGradients(t *testing.T) {
	p := newTestPassport(t, 8, 2, 3) // autoencoder width 2
	x := gradcheck.Projection(newRNG(3), 5, 8)
	proj := gradcheck.Projection(newRNG(4), 5, 8)
	loss := func() float64 {
		y, err := p.Forward(x, true)
		if err != nil {
			t.Fatal(err)
		}
		return gradcheck.Project(proj, y)
	}
	loss()
	dx, err := p.Backward(proj)
	if err != nil {
		t.Fatal(err)
	}
	dx = dx.Clone()
	aud, err := p.Backprop(proj)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(aud.Data, dx.Data) {
		t.Error("Backprop's input gradient differs from Backward's")
	}
	var grads []*tensor.Matrix
	for _, q := range p.params {
		grads = append(grads, q.G.Clone())
	}
	if err := gradcheck.Check("dx", loss, x.Data, dx.Data, nil, 1e-3, gradcheck.Default); err != nil {
		t.Error(err)
	}
	for i, q := range p.params {
		if err := gradcheck.Check(q.Name, loss, q.W.Data, grads[i].Data, nil, 1e-3, gradcheck.Default); err != nil {
			t.Errorf("parameter %s: %v", q.Name, err)
		}
	}
}

// TestPassportsChangeTheOutput: two layers with the same weights and
// different passports map the same input differently; with the same
// passports, identically.
func TestPassportsChangeTheOutput(t *testing.T) {
	a, b := newTestPassport(t, 6, 5, 1), newTestPassport(t, 6, 5, 2)
	if slices.Equal(a.sg, b.sg) || slices.Equal(a.sb, b.sb) {
		t.Fatal("two seeds drew the same passports")
	}
	for i, q := range a.params {
		copy(b.params[i].W.Data, q.W.Data)
	}
	x := gradcheck.Projection(newRNG(7), 4, 6)
	ya, _ := a.Forward(x, false)
	ya = ya.Clone()
	yb, _ := b.Forward(x, false)
	if slices.Equal(ya.Data, yb.Data) {
		t.Error("different passports give the same output")
	}
	copy(b.sg, a.sg)
	copy(b.sb, a.sb)
	if yb, _ = b.Forward(x, false); !slices.Equal(ya.Data, yb.Data) {
		t.Error("the same passports and weights give different outputs")
	}
}

// TestPassportMeans checks the draws: passport entries average the means'
// −N/2 and spread as σ² + N²/12 (uniform means plus Gaussian noise).
func TestPassportMeans(t *testing.T) {
	const d, n, sigma = 4096, 10.0, 1.0
	p, err := NewPassport(d, n, sigma, 1e-3, 11, 0)
	if err != nil {
		t.Fatal(err)
	}
	var s, s2 float64
	for _, v := range append(slices.Clone(p.sg), p.sb...) {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	m := s / (2 * d)
	v := s2/(2*d) - m*m
	if math.Abs(m+n/2) > 0.15 || math.Abs(v-(sigma*sigma+n*n/12)) > 0.6 {
		t.Errorf("passport mean %v, variance %v; want −5 and %v", m, v, sigma*sigma+n*n/12)
	}
	for _, bad := range []struct{ n, sigma float64 }{{0, 1}, {math.Inf(1), 1}, {1, -1}, {1, math.NaN()}} {
		if _, err := NewPassport(4, bad.n, bad.sigma, 1e-3, 1, 0); err == nil {
			t.Errorf("N = %v, σ = %v accepted", bad.n, bad.sigma)
		}
	}
}

func TestPassportState(t *testing.T) {
	// Another seed: other weights and passports, all restored by Load.
	fresh := newTestPassport(t, 5, 3, 99)
	checkLayerResumes(t, newTestPassport(t, 5, 3, 1), fresh, newTestPassport(t, 6, 3, 1), gradcheck.Projection(newRNG(8), 6, 5))
	if err := fresh.Step(); err == nil {
		t.Error("Step without Backward accepted")
	}
}

// TestPassiveOutputs builds the passive-side defences through the
// registry: each is a PassiveOutput, draws differently from its active
// twin at the same seed, and at most one may be on.
func TestPassiveOutputs(t *testing.T) {
	o := InputOptions{CutDim: 4, LR: 1e-2, Seed: 3}
	for _, c := range []struct {
		passive, active Params
	}{
		{Params{"mid_passive_lambda": 0.1}, Params{"mid_lambda": 0.1}},
		{Params{"fedpass_passive_range": 2}, Params{"fedpass_range": 2}},
	} {
		if err := Check("none", c.passive); err != nil {
			t.Fatal(err)
		}
		out, err := BuildPassiveOutput(c.passive, o)
		if err != nil || out == nil {
			t.Fatalf("%v: %v, %v", c.passive, out, err)
		}
		in, err := BuildInput(c.active, o)
		if err != nil {
			t.Fatal(err)
		}
		var a, b bytes.Buffer
		if err := out.Save(&a); err != nil {
			t.Fatal(err)
		}
		if err := in.Save(&b); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%v draws what its active twin draws", c.passive)
		}
		if in, _ := BuildInput(c.passive, o); in != nil {
			t.Errorf("%v builds an active input layer", c.passive)
		}
	}
	if got := PassiveSettings(Params{"fedpass_passive_range": 2, "mid_lambda": 1, "fedpass_passive_sigma": 0.5}); !slices.Equal(got, []string{"fedpass_passive_range=2", "fedpass_passive_sigma=0.5"}) {
		t.Errorf("PassiveSettings = %v", got)
	}
	if err := Check("none", Params{"mid_passive_lambda": 0.1, "fedpass_passive_range": 1}); err == nil {
		t.Error("two passive output layers accepted")
	}
	if err := Check("none", Params{"fedpass_passive_sigma": 1}); err == nil {
		t.Error("fedpass_passive_sigma without its range accepted")
	}
}

// TestPassiveMID checks MID at the passive party's output: λ times the
// batch's mean KL matches the quadrature, the input and parameter
// gradients (regulariser included) match central differences, and
// Backprop returns Backward's input gradient without touching the
// parameter gradients.
func TestPassiveMID(t *testing.T) {
	const lambda, d, k, rows = 0.4, 5, 3, 4
	out, err := BuildPassiveOutput(Params{"mid_passive_lambda": lambda, "mid_passive_bottleneck": k}, InputOptions{CutDim: d, LR: 1e-2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	} // seed 5: no ReLU of the bottleneck sits at its kink at these points
	m := out.(*MID)
	r := newRNG(10)
	for i := range m.layers[1].B.Data {
		m.layers[1].B.Data[i] = float32(r.NormFloat64())
	}
	e := gradcheck.Projection(newRNG(11), rows, d)
	proj := gradcheck.Projection(newRNG(12), rows, d)
	if _, err := out.Forward(e, true); err != nil {
		t.Fatal(err)
	}
	var kl float64
	for i := range rows {
		for j := range k {
			kl += klQuadrature(float64(m.mu.At(i, j)), math.Exp(float64(m.logv.At(i, j))/2))
		}
	}
	if got, want := out.RegLoss(), lambda*kl/rows; math.Abs(got-want) > 1e-7*math.Max(1, want) || want == 0 {
		t.Errorf("λ·mean KL = %v, quadrature %v", got, want)
	}
	noise := m.eps.Clone()
	loss := func() float64 { return gradcheck.Project(proj, m.forward(e, noise)) + m.RegLoss() }
	loss()
	de, err := out.Backward(proj)
	if err != nil {
		t.Fatal(err)
	}
	de = de.Clone()
	var grads []*tensor.Matrix
	for _, q := range m.params {
		grads = append(grads, q.G.Clone())
	}
	aud, err := out.Backprop(proj)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(aud.Data, de.Data) {
		t.Error("Backprop's input gradient differs from Backward's")
	}
	for i, q := range m.params {
		if !slices.Equal(q.G.Data, grads[i].Data) {
			t.Errorf("Backprop changed the gradient of %s", q.Name)
		}
	}
	if err := gradcheck.Check("de", loss, e.Data, de.Data, nil, 1e-3, gradcheck.Default); err != nil {
		t.Error(err)
	}
	for i, q := range m.params {
		if err := gradcheck.Check(q.Name, loss, q.W.Data, grads[i].Data, nil, 1e-3, gradcheck.Default); err != nil {
			t.Errorf("parameter %d: %v", i, err)
		}
	}
}
