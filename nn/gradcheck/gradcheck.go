// Package gradcheck checks hand-written gradients against float64 central
// finite differences.
//
// A layer's output y is turned into a scalar loss by a fixed random
// projection, L(y) = Σ_ij P_ij·y_ij, summed in float64; then ∂L/∂y = P is
// what the layer's Backward receives, and every gradient it returns can be
// compared with (L(x+h) − L(x−h)) / ((x+h) − (x−h)). The perturbed values
// are float32, so the denominator uses the values actually stored, not 2h.
//
// float32 forward passes carry rounding noise of about 1e-7 relative to
// their values, which central differences divide by 2h; [Tol] therefore
// combines a relative bound with a floor proportional to the largest
// gradient component, tight enough that a gradient off by a few percent,
// transposed or with a flipped sign still fails.
package gradcheck

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/tensor"
)

// Projection returns a rows×cols matrix of independent N(0, 1) values, the
// P of the loss L(y) = Σ P∘y.
func Projection(rng *rand.Rand, rows, cols int) *tensor.Matrix {
	p := tensor.New(rows, cols)
	for i := range p.Data {
		p.Data[i] = float32(rng.NormFloat64())
	}
	return p
}

// Project returns Σ_ij p_ij·y_ij in float64; p and y must have the same shape.
func Project(p, y *tensor.Matrix) float64 {
	if !tensor.SameShape(p, y) {
		panic(fmt.Sprintf("gradcheck: projection %d×%d for output %d×%d", p.Rows, p.Cols, y.Rows, y.Cols))
	}
	var s float64
	for i, v := range y.Data {
		s += float64(p.Data[i]) * float64(v)
	}
	return s
}

// Numeric returns the central-difference derivative of f with respect to
// x[i] for every i in idx (all of x when idx is nil). f must recompute the
// loss from the current contents of x; x is restored afterwards. The step
// is h·max(1, |x[i]|).
func Numeric(f func() float64, x []float32, idx []int, h float64) []float64 {
	central, _, _ := Differences(f, x, idx, h)
	return central
}

// Differences is Numeric returning also the one-sided differences
// (f(x+h)−f(x))/h (right) and (f(x)−f(x−h))/h (left), for functions with
// kinks (max-pooling near a tie, ReLU near zero) where the central
// difference straddles the kink.
func Differences(f func() float64, x []float32, idx []int, h float64) (central, left, right []float64) {
	if idx == nil {
		idx = make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
	}
	f0 := f()
	central = make([]float64, len(idx))
	left = make([]float64, len(idx))
	right = make([]float64, len(idx))
	for k, i := range idx {
		x0 := x[i]
		step := h * math.Max(1, math.Abs(float64(x0)))
		xp, xm := float32(float64(x0)+step), float32(float64(x0)-step)
		x[i] = xp
		fp := f()
		x[i] = xm
		fm := f()
		x[i] = x0
		central[k] = (fp - fm) / (float64(xp) - float64(xm))
		right[k] = (fp - f0) / (float64(xp) - float64(x0))
		left[k] = (f0 - fm) / (float64(x0) - float64(xm))
	}
	return central, left, right
}

// Tol is the acceptance rule for one component:
// |analytic − numeric| ≤ Rel·(|numeric| + Floor·max_j |numeric_j|).
type Tol struct{ Rel, Floor float64 }

// Default suits float32 layers checked with h = 1e-2 (linear maps) or
// 1e-3: a 2% error in any component that is at least 1% of the largest
// fails.
var Default = Tol{Rel: 2e-2, Floor: 1e-2}

// Compare checks analytic[idx[k]] against numeric[k] for every k (idx nil
// means the identity) and returns an error naming what and the worst
// component when any exceeds tol.
func Compare(name string, analytic []float32, numeric []float64, idx []int, tol Tol) error {
	var scale float64
	for _, n := range numeric {
		scale = math.Max(scale, math.Abs(n))
	}
	worst, worstK := 0.0, -1
	for k, n := range numeric {
		i := k
		if idx != nil {
			i = idx[k]
		}
		a := float64(analytic[i])
		bound := tol.Rel * (math.Abs(n) + tol.Floor*scale)
		if bound == 0 {
			bound = math.SmallestNonzeroFloat64
		}
		if r := math.Abs(a-n) / bound; r > worst || math.IsNaN(r) {
			worst, worstK = r, k
		}
	}
	if worst > 1 || math.IsNaN(worst) {
		i := worstK
		if idx != nil {
			i = idx[worstK]
		}
		return fmt.Errorf("gradcheck: %s[%d]: analytic %.6g, numeric %.6g (%.3g× the tolerance; largest numeric component %.3g)", name, i, analytic[i], numeric[worstK], worst, scale)
	}
	return nil
}

// Check is Numeric followed by Compare: it perturbs x at idx (all when
// nil), recomputing f, and compares with analytic (indexed like x).
func Check(name string, f func() float64, x []float32, analytic []float32, idx []int, h float64, tol Tol) error {
	if len(analytic) != len(x) {
		return fmt.Errorf("gradcheck: %s: %d analytic values for %d inputs", name, len(analytic), len(x))
	}
	return Compare(name, analytic, Numeric(f, x, idx, h), idx, tol)
}

// Sample returns n distinct indices in [0, size) drawn from rng (all of
// them, in order, when n ≥ size), for checking large tensors in part.
func Sample(rng *rand.Rand, size, n int) []int {
	if n >= size {
		idx := make([]int, size)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	return rng.Perm(size)[:n]
}
