package feature

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// penalty64 is the gradient penalty (λ/B)·Σ_i (‖∇D(x_i)‖ − 1)² of the
// critic relu(x·W₁ + b₁)·w₂ + b₂ computed in float64 from its definition:
// ∇D(x) = Σ_j 1[pre_j > 0]·w₂_j·W₁[:, j], written out loop by loop.
func penalty64(x *tensor.Matrix, w1, b1, w2 []float64, h int, lambda float64) float64 {
	d := x.Cols
	var p float64
	for i := range x.Rows {
		grad := make([]float64, d)
		for j := range h {
			pre := b1[j]
			for k := range d {
				pre += float64(x.Data[i*d+k]) * w1[k*h+j]
			}
			if pre > 0 {
				for k := range d {
					grad[k] += w2[j] * w1[k*h+j]
				}
			}
		}
		var n float64
		for _, g := range grad {
			n += g * g
		}
		n = math.Sqrt(n)
		p += (n - 1) * (n - 1)
	}
	return lambda * p / float64(x.Rows)
}

// TestGPCriticPenaltyGradient: the closed-form gradient of the WGAN-GP
// penalty with respect to the critic's weights equals central
// differences of the penalty recomputed in float64 from its definition,
// and the penalty's value agrees.
func TestGPCriticPenaltyGradient(t *testing.T) {
	const d, h, b, lambda = 5, 7, 6, 10.0
	rng := rand.New(rand.NewPCG(3, 4))
	c := newGPCritic(d, h, lambda, 1e-3, rng)
	for i := range c.l1.B.Data {
		c.l1.B.Data[i] = float32(rng.NormFloat64() * 0.3)
	}
	x := tensor.New(b, d)
	for i := range x.Data {
		x.Data[i] = float32(rng.NormFloat64())
	}
	got := c.penaltyGrads(x)
	w1, b1, w2 := toFloat64(c.l1.W), toFloat64(c.l1.B), toFloat64(c.l2.W)
	if want := penalty64(x, w1, b1, w2, h, lambda); math.Abs(got-want) > 1e-5*math.Max(1, want) {
		t.Fatalf("penalty %g, from the definition %g", got, want)
	}
	const step = 1e-6
	check := func(name string, w []float64, g []float32) {
		for i := range w {
			orig := w[i]
			w[i] = orig + step
			up := penalty64(x, w1, b1, w2, h, lambda)
			w[i] = orig - step
			down := penalty64(x, w1, b1, w2, h, lambda)
			w[i] = orig
			want := (up - down) / (2 * step)
			if math.Abs(float64(g[i])-want) > 1e-3*math.Max(1, math.Abs(want)) {
				t.Errorf("∂P/∂%s[%d] = %g, central difference %g", name, i, g[i], want)
			}
		}
	}
	check("W1", w1, c.gW1.Data)
	check("w2", w2, c.gW2.Data)
	// The hidden layer's biases move the penalty only across a kink.
	check("b1", b1, make([]float32, len(b1)))
}

// TestGPCriticSeparates: trained on two Gaussian clouds whose means
// differ by 3 along one axis, the critic's Wasserstein estimate rises
// towards that distance (the optimal 1-Lipschitz critic scores exactly
// 3) and its slope norm at the interpolates approaches 1.
func TestGPCriticSeparates(t *testing.T) {
	const d, b = 4, 64
	rng := rand.New(rand.NewPCG(5, 6))
	c := newGPCritic(d, 32, 10, 1e-2, rng)
	real, fake := tensor.New(b, d), tensor.New(b, d)
	eps := make([]float32, b)
	var w float64
	for range 600 {
		for i := range real.Data {
			real.Data[i] = float32(rng.NormFloat64())
			fake.Data[i] = float32(rng.NormFloat64())
		}
		for i := range b {
			real.Data[i*d] += 3
			eps[i] = rng.Float32()
		}
		w, _ = c.step(real, fake, eps)
	}
	if !(w > 2.4 && w < 3.6) {
		t.Fatalf("Wasserstein estimate %g after 600 steps, want about 3", w)
	}
}
