package nn

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// Gate is a learned convex combination of K column blocks of width D: for
// an input x = [x₁ | x₂ | … | x_K] (B×K·D) it outputs
//
//	y = Σ_k α_k·x_k,   α = softmax(θ),
//
// B×D, with one trainable logit θ_k per block (θ = 0 at the start: the
// mean of the blocks). Its gradients are, for ∂L/∂y = G,
//
//	∂L/∂x_k = α_k·G,   ∂L/∂θ_k = α_k·(s_k − Σ_m α_m·s_m),   s_k = ⟨G, x_k⟩,
//
// the second from ∂α_m/∂θ_k = α_m(δ_mk − α_k). It is how the active party
// aggregates K passive parties' embeddings of one width with weights it
// learns (aggregation gated).
type Gate struct {
	K, D  int
	theta Param
	alpha []float64
	x     *tensor.Matrix
	out   tensor.Matrix
	dx    tensor.Matrix
	s     []float64
}

// NewGate returns a gate over k blocks of width d, θ = 0.
func NewGate(k, d int) (*Gate, error) {
	if k < 2 || d < 1 {
		return nil, fmt.Errorf("nn: a gate over %d blocks of width %d: want at least 2 blocks of width ≥ 1", k, d)
	}
	g := &Gate{K: k, D: d, theta: Param{Name: "gate.theta", W: tensor.New(1, k), G: tensor.New(1, k)},
		alpha: make([]float64, k), s: make([]float64, k)}
	g.weights()
	return g, nil
}

// Weights returns α = softmax(θ), the blocks' current weights (the slice
// is the gate's own, valid until θ changes).
func (g *Gate) Weights() []float64 {
	g.weights()
	return g.alpha
}

// weights sets g.alpha from θ (shifted by its maximum, so no exponential
// overflows).
func (g *Gate) weights() {
	mx := math.Inf(-1)
	for _, t := range g.theta.W.Data {
		mx = math.Max(mx, float64(t))
	}
	var z float64
	for k, t := range g.theta.W.Data {
		g.alpha[k] = math.Exp(float64(t) - mx)
		z += g.alpha[k]
	}
	for k := range g.alpha {
		g.alpha[k] /= z
	}
}

// Forward implements Layer. x must be B×K·D.
func (g *Gate) Forward(x *tensor.Matrix) *tensor.Matrix {
	if x.Cols != g.K*g.D {
		panic(fmt.Sprintf("nn: gate over %d blocks of width %d given %d columns", g.K, g.D, x.Cols))
	}
	g.weights()
	g.x = x
	g.out.Resize(x.Rows, g.D)
	for i := range x.Rows {
		in, out := x.Row(i), g.out.Row(i)
		clear(out)
		for k, a := range g.alpha {
			ak := float32(a)
			for j, v := range in[k*g.D : (k+1)*g.D] {
				out[j] += ak * v
			}
		}
	}
	return &g.out
}

// Backward implements Layer: it sets ∂L/∂θ and returns ∂L/∂x.
func (g *Gate) Backward(dy *tensor.Matrix) *tensor.Matrix {
	x := g.x
	g.dx.Resize(x.Rows, x.Cols)
	clear(g.s)
	for i := range x.Rows {
		in, gy, dx := x.Row(i), dy.Row(i), g.dx.Row(i)
		for k, a := range g.alpha {
			ak := float32(a)
			var s float64
			for j, v := range in[k*g.D : (k+1)*g.D] {
				s += float64(gy[j]) * float64(v)
				dx[k*g.D+j] = ak * gy[j]
			}
			g.s[k] += s
		}
	}
	var mean float64
	for k, a := range g.alpha {
		mean += a * g.s[k]
	}
	for k, a := range g.alpha {
		g.theta.G.Data[k] = float32(a * (g.s[k] - mean))
	}
	return &g.dx
}

// Params implements Layer: θ.
func (g *Gate) Params() []*Param { return []*Param{&g.theta} }
