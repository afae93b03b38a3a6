package protect

import (
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// klQuadrature is KL(N(μ, s²) ‖ N(0, 1)) = ∫ q log(q/p) by Simpson's rule
// over μ ± 12s: an independent value for the closed form.
func klQuadrature(mu, s float64) float64 {
	const n = 4000 // even
	a, b := mu-12*s, mu+12*s
	h := (b - a) / n
	f := func(z float64) float64 {
		lq := -0.5*((z-mu)/s)*((z-mu)/s) - math.Log(s) - 0.5*math.Log(2*math.Pi)
		lp := -0.5*z*z - 0.5*math.Log(2*math.Pi)
		return math.Exp(lq) * (lq - lp)
	}
	sum := f(a) + f(b)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(a+float64(i)*h)
	}
	return sum * h / 3
}

func newTestMID(t *testing.T, d, k int, lambda float64) *MID {
	t.Helper()
	l, err := BuildInput(Params{"mid_lambda": lambda, "mid_bottleneck": float64(k)}, InputOptions{CutDim: d, LR: 1e-2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	m := l.(*MID)
	// Spread the log-variances so that e^v matters.
	r := newRNG(9)
	for i := range m.layers[1].B.Data {
		m.layers[1].B.Data[i] = float32(r.NormFloat64())
	}
	return m
}

func TestMIDKLMatchesTheClosedForm(t *testing.T) {
	const lambda = 0.3
	m := newTestMID(t, 4, 3, lambda)
	e := gradcheck.Projection(newRNG(2), 6, 4)
	if _, err := m.Forward(e, false); err != nil {
		t.Fatal(err)
	}
	var want float64
	for i := range 6 {
		for j := range 3 {
			want += klQuadrature(float64(m.mu.At(i, j)), math.Exp(float64(m.logv.At(i, j))/2))
		}
	}
	want *= lambda / 6
	if got := m.RegLoss(); math.Abs(got-want) > 1e-7*math.Max(1, want) || want == 0 {
		t.Errorf("λ·mean KL = %v, quadrature %v", got, want)
	}
}

func TestMIDGradients(t *testing.T) {
	m := newTestMID(t, 5, 3, 0.7)
	e := gradcheck.Projection(newRNG(3), 4, 5)
	p := gradcheck.Projection(newRNG(4), 4, 5)
	if _, err := m.Forward(e, true); err != nil {
		t.Fatal(err)
	}
	noise := m.eps.Clone()
	loss := func() float64 {
		out := m.forward(e, noise)
		return gradcheck.Project(p, out) + m.RegLoss()
	}
	loss()
	de, err := m.Backward(p)
	if err != nil {
		t.Fatal(err)
	}
	de = de.Clone()
	grads := []*tensor.Matrix{}
	for _, q := range m.params {
		grads = append(grads, q.G.Clone())
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

func TestMIDEvaluationAndState(t *testing.T) {
	m := newTestMID(t, 4, 2, 0.1)
	e := gradcheck.Projection(newRNG(6), 8, 4)
	a, _ := m.Forward(e, false)
	a = a.Clone()
	b, _ := m.Forward(e, false)
	if !slices.Equal(a.Data, b.Data) {
		t.Error("evaluation is not deterministic")
	}
	if _, err := m.Backward(gradcheck.Projection(newRNG(1), 8, 4)); err == nil {
		t.Error("Backward after an evaluation Forward accepted")
	}
	// A saved state trains on bit-identically after Load into a fresh one.
	checkLayerResumes(t, m, newTestMID(t, 4, 2, 0.1), newTestMID(t, 4, 3, 0.1), e)
}

func TestMIDSecondaryParameterNeedsLambda(t *testing.T) {
	if err := Check("none", Params{"mid_bottleneck": 4}); err == nil {
		t.Error("mid_bottleneck without mid_lambda accepted")
	}
	if err := Check("none", Params{"mid_bottleneck": 4, "mid_lambda": 0.1}); err != nil {
		t.Error(err)
	}
}
