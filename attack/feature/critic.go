package feature

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// gpCritic is a Wasserstein critic of embeddings with one hidden layer,
// D(z) = relu(z·W₁ + b₁)·w₂ + b₂, trained with the gradient penalty of
// [Gulrajani17] (WGAN-GP): at every step it descends
//
//	mean D(fake) − mean D(real) + λ·mean_i (‖∇_z D(ẑ_i)‖ − 1)²,
//
// ẑ_i = ε_i·real_i + (1 − ε_i)·fake_i, ε_i ~ U(0, 1).
//
// The penalty's gradient needs the second derivative of D, which nn does
// not provide; for this critic it is in closed form. With the hidden
// units' mask m_i = 1[ẑ_i·W₁ + b₁ > 0] (constant almost everywhere),
// v_i = ∇_z D(ẑ_i) = W₁·(m_i ⊙ w₂), and for u_i = ∂P/∂v_i =
// (2λ/B)·(‖v_i‖ − 1)·v_i/‖v_i‖:
//
//	∂P/∂W₁ = Σ_i u_i·(m_i ⊙ w₂)ᵀ,   ∂P/∂w₂ = Σ_i m_i ⊙ (u_i·W₁),
//
// and ∂P/∂b₁ = ∂P/∂b₂ = 0.
type gpCritic struct {
	l1, l2 *nn.Dense
	relu   nn.ReLU
	params []*nn.Param
	opt    *nn.Adam
	lambda float64

	joint, mix, gated, v, u, uw tensor.Matrix
	gW1, gW2                    tensor.Matrix
	dOut                        []float32
	norms                       []float64
}

// newGPCritic returns a critic of d-wide embeddings with hidden units,
// penalty weight lambda, trained by Adam at lr.
func newGPCritic(d, hidden int, lambda float64, lr float32, rng *rand.Rand) *gpCritic {
	c := &gpCritic{l1: nn.NewDense(d, hidden, nn.HeNormal, rng), l2: nn.NewDense(hidden, 1, nn.GlorotUniform, rng),
		opt: nn.NewAdam(lr), lambda: lambda}
	c.params = append(slices.Clone(c.l1.Params()), c.l2.Params()...)
	return c
}

// forward returns D of every row of z (a B×1 matrix, valid until the
// next forward).
func (c *gpCritic) forward(z *tensor.Matrix) *tensor.Matrix {
	return c.l2.Forward(c.relu.Forward(c.l1.Forward(z)))
}

// slope returns ∂/∂z of Σ_i dy_i·D(z_i) at the last forward, leaving the
// parameter gradients alone.
func (c *gpCritic) slope(dy []float32) *tensor.Matrix {
	return c.l1.InputGrad(c.relu.InputGrad(c.l2.InputGrad(tensor.FromSlice(len(dy), 1, dy))))
}

// step is one Adam step of the critic on a batch of real and fake rows
// (as many of each) with interpolation weights eps (one per row). It
// returns the Wasserstein estimate mean D(real) − mean D(fake) before the
// step and the penalty term.
func (c *gpCritic) step(real, fake *tensor.Matrix, eps []float32) (wasserstein, penalty float64) {
	b, d := real.Rows, real.Cols
	// The penalty first: its gradients go to gW1, gW2, because the
	// loss's backward below overwrites the layers' own.
	c.mix.Resize(b, d)
	for i := range b {
		e := eps[i]
		r, f, m := real.Row(i), fake.Row(i), c.mix.Row(i)
		for j := range m {
			m[j] = e*r[j] + (1-e)*f[j]
		}
	}
	penalty = c.penaltyGrads(&c.mix)

	c.joint.Resize(2*b, d)
	copy(c.joint.Data, fake.Data)
	copy(c.joint.Data[b*d:], real.Data)
	out := c.forward(&c.joint)
	c.dOut = fill(c.dOut, 2*b, -1/float32(b))
	for i := range b {
		c.dOut[i] = 1 / float32(b)
		wasserstein += float64(out.Data[b+i]-out.Data[i]) / float64(b)
	}
	c.l1.Backward(c.relu.Backward(c.l2.Backward(tensor.FromSlice(2*b, 1, c.dOut))))
	addTo(c.l1.Params()[0].G, &c.gW1)
	addTo(c.l2.Params()[0].G, &c.gW2)
	c.opt.Step(c.params)
	return wasserstein, penalty
}

// penaltyGrads returns P = (λ/B)·Σ_i (‖∇D(x_i)‖ − 1)² over the rows of x
// and sets gW1, gW2 to ∂P/∂W₁, ∂P/∂w₂ (see gpCritic).
func (c *gpCritic) penaltyGrads(x *tensor.Matrix) float64 {
	b := x.Rows
	pre := c.l1.Forward(x) // B×H
	w2 := c.l2.W.Data      // H×1
	h := len(w2)
	c.gated.Resize(b, h)
	for i, v := range pre.Data {
		if v > 0 {
			c.gated.Data[i] = w2[i%h]
		} else {
			c.gated.Data[i] = 0
		}
	}
	c.v.Resize(b, x.Cols)
	tensor.MatMul(&c.v, &c.gated, false, c.l1.W, true, 1, 0) // v_i = W₁·(m_i ⊙ w₂)
	if cap(c.norms) < b {
		c.norms = make([]float64, b)
	}
	c.norms = c.norms[:b]
	tensor.RowNorms(c.norms, &c.v)
	c.u.Resize(b, x.Cols)
	var p float64
	for i, n := range c.norms {
		p += (n - 1) * (n - 1)
		k := float32(0)
		if n > 0 {
			k = float32(2 * c.lambda / float64(b) * (n - 1) / n)
		}
		for j, v := range c.v.Row(i) {
			c.u.Data[i*x.Cols+j] = k * v
		}
	}
	c.gW1.Resize(c.l1.W.Rows, c.l1.W.Cols)
	tensor.MatMul(&c.gW1, &c.u, true, &c.gated, false, 1, 0) // Σ_i u_i (m_i ⊙ w₂)ᵀ
	c.uw.Resize(b, h)
	tensor.MatMul(&c.uw, &c.u, false, c.l1.W, false, 1, 0) // u_i·W₁
	c.gW2.Resize(h, 1)
	clear(c.gW2.Data)
	for i, v := range c.uw.Data {
		if pre.Data[i] > 0 {
			c.gW2.Data[i%h] += v
		}
	}
	return c.lambda * p / float64(b)
}

// addTo adds src to dst element by element (same shape).
func addTo(dst, src *tensor.Matrix) {
	for i, v := range src.Data {
		dst.Data[i] += v
	}
}

// wassersteinGap is the distance between two sets of rows that FSHA's
// critic estimates, measured independently of it for the tests and the
// logs: the squared distance between their means plus that between their
// per-column standard deviations (the 2-Wasserstein distance between
// diagonal Gaussians fitted to them).
func wassersteinGap(a, b *tensor.Matrix) float64 {
	var s float64
	for j := range a.Cols {
		ma, sa := colStats(a, j)
		mb, sb := colStats(b, j)
		s += (ma-mb)*(ma-mb) + (sa-sb)*(sa-sb)
	}
	return s
}

// colStats is column j's mean and standard deviation over m's rows.
func colStats(m *tensor.Matrix, j int) (mean, sd float64) {
	mean, v := tensor.ColumnMoments(m, j)
	return mean, math.Sqrt(v)
}
