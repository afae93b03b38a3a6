package attack

import (
	"fmt"
	"math"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
)

func init() {
	Register("grad_match", func() Attack { return NewGradMatch() })
}

// GradMatch is optimisation-based batch label inference (in the spirit of
// Zou et al., IEEE TBD 2022, and ExPLoit, Kariyappa and Qureshi 2021):
// the attacker fits a surrogate top model and dummy labels so that the
// gradient they would produce matches the gradient it received, and scores
// each row by its fitted label.
//
// The surrogate is linear on the layer's output e (logit ⟨w, e_i⟩ + c)
// under the mean binary cross-entropy over the batch, so the gradient it
// produces for row i is (p_i − y_i)·w/B with p_i = σ(⟨w, e_i⟩ + c). The
// attack minimises Σ_i ‖(p_i − y_i)w − B·g_i‖² over w, c and y ∈ [0, 1]ᴮ.
// For fixed (w, c) the best label of each row is closed-form,
// y_i = clamp(p_i − ⟨B·g_i, w⟩/‖w‖², 0, 1), so the labels are eliminated
// and (w, c) are fitted by Adam on the reduced objective (whose gradient is
// the partial gradient at the best labels). w starts along the top right
// singular vector of B·G, once with each sign; the fit with the lower
// residual wins. The score is the unclamped label p_i − ⟨B·g_i, w⟩/‖w‖²
// (the same order as the clamped one, without its ties).
//
// It needs the layer's output as well as its gradient (Needs.WithOutput)
// and costs O(Iterations·B·d) per batch.
type GradMatch struct {
	// Iterations is the number of Adam steps per sign; LR scales the step
	// (relative to the size of w, and absolute for c).
	Iterations int
	LR         float64

	bg             []float64 // B·G, row-major
	e              []float64
	w, gw, mw, vw  []float64
	best           []float64
	proj, p, t     []float64
	power, powerTo []float64
	sorted         []float64
}

// NewGradMatch returns the attack with 150 iterations per sign and step
// 0.02.
func NewGradMatch() *GradMatch { return &GradMatch{Iterations: 150, LR: 0.02} }

// Name implements Attack.
func (*GradMatch) Name() string { return "grad_match" }

// Params implements Tunable: the Adam steps per sign and the step size.
func (*GradMatch) Params() []Param {
	return []Param{
		{Key: "iterations", Help: "Adam steps per sign", Min: 50, Max: 400, Int: true, Default: 150},
		{Key: "lr", Help: "Adam step size", Min: 0.002, Max: 0.2, Log: true, Default: 0.02},
	}
}

// SetParams implements Tunable.
func (a *GradMatch) SetParams(v Values) error {
	if err := checkValues(a.Name(), a.Params(), v); err != nil {
		return err
	}
	a.Iterations, a.LR = int(v["iterations"]), v["lr"]
	return nil
}

// Needs implements Attack: the gradient and the layer's output; it is
// expensive (left out of "all").
func (*GradMatch) Needs() Needs { return Needs{Input: Gradient, WithOutput: true, Expensive: true} }

// Score implements Attack; every row is scored.
func (a *GradMatch) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	if obs.Output == nil || obs.Output.Rows != n {
		return fmt.Errorf("attack %s at layer %q: needs the layer's output for the %d rows (Observation.Output)", a.Name(), obs.Layer, n)
	}
	if err := checkFinite(a.Name(), obs.Layer, "gradient", obs.X); err != nil {
		return err
	}
	if err := checkFinite(a.Name(), obs.Layer, "output", obs.Output); err != nil {
		return err
	}
	fill(scored, true)
	d, de := obs.X.Cols, obs.Output.Cols
	if d != de {
		return fmt.Errorf("attack %s at layer %q: gradient has %d columns, output %d", a.Name(), obs.Layer, d, de)
	}
	a.bg, a.e = buf.Grow(a.bg, n*d), buf.Grow(a.e, n*d)
	for k, v := range obs.X.Data[:n*d] {
		a.bg[k] = float64(v) * float64(n)
	}
	for k, v := range obs.Output.Data[:n*d] {
		a.e[k] = float64(v)
	}
	// Top right singular vector of B·G by power iteration on GᵀG.
	a.w, a.best = buf.Grow(a.w, d+1), buf.Grow(a.best, d+1)
	v := a.topSingular(n, d)
	var sigma float64
	a.proj = buf.Grow(a.proj, n)
	for i := range n {
		s := dotF(a.bg[i*d:(i+1)*d], v)
		a.proj[i] = s
		sigma += s * s
	}
	sigma = math.Sqrt(sigma / float64(max(n, 1)))
	if sigma == 0 {
		fill(scores, 0)
		return nil
	}
	bestLoss := math.Inf(1)
	for _, sign := range []float64{1, -1} {
		// |δ| ≈ ½ at the start: w = 2σ·v.
		for j := range d {
			a.w[j] = sign * 2 * sigma * v[j]
		}
		a.w[d] = 0
		loss := a.fit(n, d)
		if loss < bestLoss {
			bestLoss = loss
			copy(a.best, a.w)
		}
	}
	copy(a.w, a.best)
	a.labels(n, d)
	// The score is −δ_i = y_i − p_i, the fitted label minus the
	// surrogate's prediction (−B·∂L/∂logit_i). (w, c, y) and (−w, −c,
	// 1 − y) produce the same gradient, so the fit alone cannot orient
	// it: the attacker's prior does. Positives are the minority (the
	// smaller of the two 1-D 2-means clusters of the scores is positive),
	// or, without that prior, positives are predicted with less
	// confidence (the cluster with the larger mean |δ| is positive).
	for i := range n {
		scores[i] = a.t[i] - a.p[i]
	}
	a.sorted = buf.Grow(a.sorted, n)
	copy(a.sorted, scores)
	slices.Sort(a.sorted)
	m, ok := TwoMeans1D(a.sorted)
	if !ok {
		return nil
	}
	var flip bool
	if obs.PositivesMinority {
		flip = m < n-m
	} else {
		var lo, hi float64
		for _, v := range a.sorted[:m] {
			lo += math.Abs(v)
		}
		for _, v := range a.sorted[m:] {
			hi += math.Abs(v)
		}
		flip = lo/float64(m) > hi/float64(n-m)
	}
	if flip {
		for i := range scores {
			scores[i] = -scores[i]
		}
	}
	return nil
}

// topSingular returns the top right singular vector of the n×d row-major
// a.bg (power iteration on BᵀB from a fixed start, 200 steps at most).
func (a *GradMatch) topSingular(n, d int) []float64 {
	a.power, a.powerTo = buf.Grow(a.power, d), buf.Grow(a.powerTo, d)
	for j := range d {
		a.power[j] = 1 / math.Sqrt(float64(d)) * (1 + 0.01*float64(j%7))
	}
	a.proj = buf.Grow(a.proj, n)
	for range 200 {
		for i := range n {
			a.proj[i] = dotF(a.bg[i*d:(i+1)*d], a.power)
		}
		clear(a.powerTo)
		for i := range n {
			row := a.bg[i*d : (i+1)*d]
			for j, x := range row {
				a.powerTo[j] += a.proj[i] * x
			}
		}
		if normalise(a.powerTo) == 0 {
			break
		}
		var diff float64
		for j := range d {
			diff += math.Abs(a.powerTo[j] - a.power[j])
		}
		a.power, a.powerTo = a.powerTo, a.power
		if diff < 1e-10 {
			break
		}
	}
	return a.power
}

// labels sets a.p (the surrogate's probabilities), a.t (the unclamped
// best labels) and returns the residual Σ‖(p_i − y_i)w − B·g_i‖² at the
// clamped labels, with w = a.w[:d], c = a.w[d].
func (a *GradMatch) labels(n, d int) float64 {
	a.p, a.t = buf.Grow(a.p, n), buf.Grow(a.t, n)
	w, c := a.w[:d], a.w[d]
	ww := dotF(w, w)
	var loss float64
	for i := range n {
		e, bg := a.e[i*d:(i+1)*d], a.bg[i*d:(i+1)*d]
		p := sigmoid(dotF(e, w) + c)
		gw := dotF(bg, w)
		a.p[i] = p
		a.t[i] = p - gw/ww
		delta := p - min(max(a.t[i], 0), 1)
		// ‖δw − bg‖² = δ²‖w‖² − 2δ⟨bg, w⟩ + ‖bg‖².
		loss += delta*delta*ww - 2*delta*gw + dotF(bg, bg)
	}
	return loss
}

// fit runs Adam on (w, c) = a.w from its current value and returns the
// final residual.
func (a *GradMatch) fit(n, d int) float64 {
	a.gw, a.mw, a.vw = buf.Grow(a.gw, d+1), buf.Grow(a.mw, d+1), buf.Grow(a.vw, d+1)
	clear(a.mw)
	clear(a.vw)
	scale := math.Sqrt(dotF(a.w[:d], a.w[:d]) / float64(d))
	const b1, b2, eps = 0.9, 0.999, 1e-12
	for it := 1; it <= a.Iterations; it++ {
		a.labels(n, d)
		w := a.w[:d]
		clear(a.gw)
		for i := range n {
			e, bg := a.e[i*d:(i+1)*d], a.bg[i*d:(i+1)*d]
			delta := a.p[i] - min(max(a.t[i], 0), 1)
			// r = δw − bg; ∂/∂w of ‖r‖² with δ fixed: 2δr; through p:
			// ∂/∂δ = 2⟨r, w⟩, ∂δ/∂(w, c) = p(1−p)(e, 1).
			rw := delta*dotF(w, w) - dotF(bg, w)
			dd := 2 * rw * a.p[i] * (1 - a.p[i])
			for j := range d {
				a.gw[j] += 2*delta*(delta*w[j]-bg[j]) + dd*e[j]
			}
			a.gw[d] += dd
		}
		c1, c2 := 1-math.Pow(b1, float64(it)), 1-math.Pow(b2, float64(it))
		for j := range d + 1 {
			g := a.gw[j]
			a.mw[j] = b1*a.mw[j] + (1-b1)*g
			a.vw[j] = b2*a.vw[j] + (1-b2)*g*g
			lr := a.LR * scale
			if j == d {
				lr = a.LR * 5
			}
			a.w[j] -= lr * (a.mw[j] / c1) / (math.Sqrt(a.vw[j]/c2) + eps)
		}
	}
	return a.labels(n, d)
}

// dotF is ⟨a, b⟩ for float64 vectors of the same length (four
// independent accumulators, so that the additions overlap).
func dotF(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
