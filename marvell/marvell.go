// Package marvell solves the Marvell optimisation problem of METHODS §4
// (Theorem 2 of [Li22], docs/METHODS.md §10): given the within-class
// gradient variances u (negatives) and v (positives), the dimension d, the
// squared distance g = ‖Δ‖² between the class means, the positive fraction
// p and a noise power budget P, it finds the four noise variances
//
//	λ₁⁽⁰⁾, λ₂⁽⁰⁾ (negatives) and λ₁⁽¹⁾, λ₂⁽¹⁾ (positives)
//
// that minimise
//
//	(d−1)(λ₂⁰+u)/(λ₂¹+v) + (d−1)(λ₂¹+v)/(λ₂⁰+u) + (λ₁⁰+u+g)/(λ₁¹+v) + (λ₁¹+v+g)/(λ₁⁰+u)
//
// subject to pλ₁¹ + p(d−1)λ₂¹ + (1−p)λ₁⁰ + (1−p)(d−1)λ₂⁰ ≤ P, λ ≥ 0 and
// λ₂ ≤ λ₁ within each class. The minimum, halved and less d, is the
// symmetric KL divergence sumKL* between the perturbed class distributions
// (Gaussian model), from which the package derives the error lower bound
// and the worst-case leak-AUC bound.
//
// # The solver
//
// The problem is invariant to scaling u, v, g and P together, so [Solve]
// divides them by their maximum, solves, and scales the λ's back; it works
// unchanged for ‖Δ‖² anywhere from 1e-20 to 1e8 and beyond. It swaps the
// classes (p ↔ 1−p) so that u ≤ v, where λ₂⁽¹⁾ = 0 is optimal (the paper's
// argument: with u ≤ v, noise on the positives' orthogonal complement only
// moves the variance ratio away from 1 and costs budget). The optimum lies on
// the budget constraint, so three free variables remain: x₀ = λ₁⁽⁰⁾,
// y₀ = λ₂⁽⁰⁾ and x₁ = λ₁⁽¹⁾, with x₁ fixed by the other two. The solver
// nests two exact one-dimensional searches:
//
//   - inner: for a fixed y₀, the budget left for the Δ direction is split
//     between x₀ and x₁; the objective along that segment is strictly convex
//     (its second derivative is a sum of positive terms), so its minimiser is
//     the root of the derivative, found by safeguarded Newton iteration;
//   - outer: the value V(y₀) of the inner problem, whose derivative follows
//     from the envelope theorem; y₀ ranges over [0, min(v−u, P/((1−p)d))]
//     (beyond v−u the orthogonal variance ratio passes 1, which only costs
//     budget; beyond P/((1−p)d) the ordering λ₂⁽⁰⁾ ≤ λ₁⁽⁰⁾ is infeasible).
//     V' is sampled on a grid, every sign change from − to + is refined with
//     Brent's method, and the best candidate wins, so a non-convex V would
//     still be handled.
//
// A final pass of exact line searches along the three coordinate segments
// of the authors' alternating method (fix one free variable, move the
// other two along the constraint) accepts only strict improvements.
//
// The solver is deterministic, allocates nothing, and takes a few
// microseconds per problem.
package marvell

import (
	"errors"
	"fmt"
	"math"
)

// InfSumKL stands for an infinite sumKL (a class without any variance and
// no noise to hide it) in values that end up in JSON, which has no
// infinity: it is math.MaxFloat64. Every function of this package that
// returns a sumKL saturates at it.
const InfSumKL = math.MaxFloat64

// Problem is one instance of the Marvell problem. Field names follow METHODS
// §4: u, v, d, g = ‖Δ‖², p, P.
type Problem struct {
	U     float64 // u: per-coordinate variance of the negative class, ≥ 0
	V     float64 // v: per-coordinate variance of the positive class, ≥ 0
	D     int     // d: gradient dimension, ≥ 1
	G     float64 // g = ‖Δ‖², squared distance between the class means, ≥ 0
	Pos   float64 // p: fraction of positives, in (0, 1)
	Power float64 // P: noise power budget, ≥ 0
}

// Solution is the optimal noise of a [Problem].
type Solution struct {
	Lam10 float64 // λ₁⁽⁰⁾: negatives' variance along Δ
	Lam20 float64 // λ₂⁽⁰⁾: negatives' variance in each direction orthogonal to Δ
	Lam11 float64 // λ₁⁽¹⁾: positives' variance along Δ
	Lam21 float64 // λ₂⁽¹⁾: positives' variance in each direction orthogonal to Δ
	SumKL float64 // sumKL* = objective/2 − d at the λ's, computed without cancellation
}

// ErrInvalid is wrapped by every error about a bad [Problem].
var ErrInvalid = errors.New("marvell: invalid problem")

// Validate reports the first field of pr that is out of range: NaN or
// infinite values, negative u, v, g or P, d < 1, or p outside (0, 1).
func (pr Problem) Validate() error {
	for _, f := range []struct {
		name string
		x    float64
	}{{"u", pr.U}, {"v", pr.V}, {"g", pr.G}, {"P", pr.Power}} {
		if math.IsNaN(f.x) || math.IsInf(f.x, 0) {
			return fmt.Errorf("%w: %s = %v is not finite", ErrInvalid, f.name, f.x)
		}
		if f.x < 0 {
			return fmt.Errorf("%w: %s = %v is negative", ErrInvalid, f.name, f.x)
		}
	}
	if pr.D < 1 {
		return fmt.Errorf("%w: d = %d, want d ≥ 1", ErrInvalid, pr.D)
	}
	if !(pr.Pos > 0 && pr.Pos < 1) {
		return fmt.Errorf("%w: p = %v, want 0 < p < 1", ErrInvalid, pr.Pos)
	}
	return nil
}

// ratioExcess returns a/b + b/a − 2 = (a−b)²/(ab) for a, b ≥ 0, with
// 0/0 read as 0 (two identical point masses) and a zero against a
// positive value as +Inf.
func ratioExcess(a, b float64) float64 {
	if a == b {
		return 0
	}
	if a == 0 || b == 0 {
		return math.Inf(1)
	}
	d := a - b
	return (d / a) * (d / b)
}

// meanExcess returns g/a + g/b, with 0·(1/0) read as 0.
func meanExcess(g, a, b float64) float64 {
	if g == 0 {
		return 0
	}
	return g/a + g/b
}

// excess returns objective − 2d at the given λ's, a sum of non-negative
// terms (so it loses nothing to cancellation), possibly +Inf.
func excess(pr Problem, lam10, lam20, lam11, lam21 float64) float64 {
	a, b := lam10+pr.U, lam11+pr.V
	e := ratioExcess(a, b) + meanExcess(pr.G, a, b)
	if pr.D > 1 {
		e += float64(pr.D-1) * ratioExcess(lam20+pr.U, lam21+pr.V)
	}
	return e
}

// Objective returns the objective of METHODS §4 at the given λ's, without
// checking feasibility. It is +Inf where a class has zero total variance
// in some direction and the other does not (or the means differ).
func Objective(pr Problem, lam10, lam20, lam11, lam21 float64) float64 {
	return 2*float64(pr.D) + excess(pr, lam10, lam20, lam11, lam21)
}

// SumKLAt returns objective/2 − d at the given λ's, computed as half a sum
// of non-negative terms, saturated at [InfSumKL].
func SumKLAt(pr Problem, lam10, lam20, lam11, lam21 float64) float64 {
	return saturate(excess(pr, lam10, lam20, lam11, lam21) / 2)
}

// SumKLBefore returns the sumKL between the unprotected class
// distributions (all λ = 0): ((d−1)(u/v + v/u) + (u+g)/v + (v+g)/u)/2 − d.
// When u or v is 0 (and the classes differ) it is infinite, returned as
// [InfSumKL] so that it can be written to JSON; u = v = 0 with g = 0 gives 0.
func SumKLBefore(pr Problem) float64 {
	return SumKLAt(pr, 0, 0, 0, 0)
}

func saturate(x float64) float64 {
	if x > InfSumKL || math.IsNaN(x) {
		return InfSumKL
	}
	return x
}

// ErrorLowerBound returns ½ − sqrt(sumKL)/4, the lower bound on the error
// of any label classifier at threshold ½ (technical report, via Pinsker),
// clamped at 0 where it is vacuous (sumKL ≥ 4).
func ErrorLowerBound(sumKL float64) float64 {
	if !(sumKL >= 0) {
		sumKL = 0
	}
	return math.Max(0, 0.5-math.Sqrt(sumKL)/4)
}

// AUCBound returns the worst-case leak-AUC bound of Theorem 1,
// ½ + sqrt(ε)/2 − ε/8 for ε = sumKL < 4, and 1 for ε ≥ 4 (where the bound
// reaches 1 and says nothing).
func AUCBound(sumKL float64) float64 {
	if !(sumKL >= 0) {
		sumKL = 0
	}
	if sumKL >= 4 {
		return 1
	}
	return 0.5 + math.Sqrt(sumKL)/2 - sumKL/8
}

// TargetSumKL returns the sumKL target τ = (2 − 4L)² that guarantees the
// error lower bound L (0 ≤ L ≤ ½).
func TargetSumKL(errorBound float64) float64 {
	t := 2 - 4*errorBound
	return t * t
}

// Solve returns the optimal λ's of pr, or an error wrapping [ErrInvalid]
// when pr does not validate. With P = 0 every λ is 0. With d = 1 there is
// no orthogonal complement and λ₂⁽⁰⁾ = λ₂⁽¹⁾ = 0.
func Solve(pr Problem) (Solution, error) {
	if err := pr.Validate(); err != nil {
		return Solution{}, err
	}
	return solveValid(pr), nil
}

func solveValid(pr Problem) Solution {
	scale := math.Max(math.Max(pr.U, pr.V), math.Max(pr.G, pr.Power))
	if pr.Power == 0 || scale == 0 {
		return Solution{SumKL: SumKLBefore(pr)}
	}
	if pr.U == 0 && pr.V == 0 {
		return closedFormUV0(pr)
	}
	// Normalise, and swap the classes so that u ≤ v.
	swap := pr.U > pr.V
	r := reduced{
		u: pr.U / scale, v: pr.V / scale, g: pr.G / scale, P: pr.Power / scale,
		p: pr.Pos, q: 1 - pr.Pos, D: float64(pr.D - 1),
	}
	if swap {
		r.u, r.v, r.p, r.q = r.v, r.u, r.q, r.p
	}
	x0, y0, x1 := r.solve()
	var s Solution
	if swap {
		s = Solution{Lam11: x0 * scale, Lam21: y0 * scale, Lam10: x1 * scale}
	} else {
		s = Solution{Lam10: x0 * scale, Lam20: y0 * scale, Lam11: x1 * scale}
	}
	s.SumKL = SumKLAt(pr, s.Lam10, s.Lam20, s.Lam11, s.Lam21)
	return s
}

// closedFormUV0 solves the case u = v = 0 (P > 0) exactly. The
// orthogonal directions need no noise (λ₂ = 0 makes both classes point
// masses there, at the same place), and along Δ, with r = λ₁⁰/λ₁¹ and
// k = g/P, the objective less 2 is
//
//	r(1 + k(1−p)) + (1 + kp)/r + k − 2,
//
// minimised at r = sqrt((1+kp)/(1+k(1−p))) with value
// 2·sqrt((1+kp)(1+k(1−p))) + k − 2; then λ₁¹ = P/((1−p)r + p).
func closedFormUV0(pr Problem) Solution {
	p, q := pr.Pos, 1-pr.Pos
	k := pr.G / pr.Power
	r := math.Sqrt((1 + k*p) / (1 + k*q))
	l11 := pr.Power / (q*r + p)
	s := Solution{Lam10: r * l11, Lam11: l11}
	s.SumKL = SumKLAt(pr, s.Lam10, 0, s.Lam11, 0) // the closed value, without its cancellation
	return s
}

// reduced is a normalised problem with u ≤ v, so λ₂⁽¹⁾ = 0. Its free
// variables are x0 = λ₁⁽⁰⁾, y0 = λ₂⁽⁰⁾ and x1 = λ₁⁽¹⁾ on the plane
// q(x0 + D·y0) + p·x1 = P, with q = 1−p and D = d−1.
type reduced struct {
	u, v, g, P, p, q, D float64
}

// obj returns objective − 2d at (x0, y0, x1).
func (r *reduced) obj(x0, y0, x1 float64) float64 {
	a, b := x0+r.u, x1+r.v
	e := ratioExcess(a, b) + meanExcess(r.g, a, b)
	if r.D > 0 {
		e += r.D * ratioExcess(y0+r.u, r.v)
	}
	return e
}

// grad returns the partial derivatives of obj (treating x0, y0, x1 as
// independent). Infinite derivatives appear where a variance is 0.
func (r *reduced) grad(x0, y0, x1 float64) (gx0, gy0, gx1 float64) {
	a, b := x0+r.u, x1+r.v
	gx0 = 1/b - (b+r.g)/(a*a)
	gx1 = 1/a - (a+r.g)/(b*b)
	if r.D > 0 {
		c := y0 + r.u
		gy0 = r.D * (1/r.v - r.v/(c*c))
	}
	return
}

// solve returns the optimum (x0, y0, x1) of r.
func (r *reduced) solve() (x0, y0, x1 float64) {
	ymax := 0.0
	if r.D > 0 {
		ymax = math.Min(r.v-r.u, r.P/(r.q*(r.D+1)))
	}
	if ymax > 0 {
		y0 = r.outer(ymax)
	}
	x0, x1, _ = r.inner(y0)
	x0, y0, x1 = r.polish(x0, y0, x1)
	return
}

// x1Of returns x1 on the constraint plane, clamped at 0 against rounding.
func (r *reduced) x1Of(x0, y0 float64) float64 {
	return math.Max(0, (r.P-r.q*(x0+r.D*y0))/r.p)
}

// inner minimises over x0 for fixed y0 (x1 following from the constraint),
// returning x0, x1 and V'(y0), the derivative of the inner value with
// respect to y0 (envelope theorem).
func (r *reduced) inner(y0 float64) (x0, x1, dv float64) {
	w := r.P - r.q*r.D*y0 // budget left for the Δ direction
	lo, hi := y0, math.Max(y0, w/r.q)
	k := r.q / r.p
	// h'(x0) = ∂A − k·∂B, strictly increasing.
	hp := func(x float64) (float64, float64) {
		a := x + r.u
		b := r.v + math.Max(0, (w-r.q*x)/r.p)
		da := 1/b - (b+r.g)/(a*a)
		db := 1/a - (a+r.g)/(b*b)
		d2 := 2*(b+r.g)/(a*a*a) + 2*k*(1/(a*a)+1/(b*b)) + 2*k*k*(a+r.g)/(b*b*b)
		return da - k*db, d2
	}
	regime := 0 // −1: x0 = lo, +1: x0 = hi, 0: interior
	if f, _ := hp(lo); !(f < 0) {
		x0, regime = lo, -1
	} else if f, _ := hp(hi); !(f > 0) {
		x0, regime = hi, 1
	} else {
		// Start on the diagonal A = B, the optimum for g = 0.
		x0 = newtonRoot(hp, lo, hi, r.p*(r.v-r.u)+w)
	}
	x1 = r.x1Of(x0, y0)
	if r.D == 0 {
		return x0, x1, 0
	}
	gx0, gy0, gx1 := r.grad(x0, y0, x1)
	switch regime {
	case -1: // x0 = y0 moves with y0; x1 = (P − q·d·y0)/p
		dv = gy0 + gx0 - r.q*(r.D+1)/r.p*gx1
	case 1: // x1 = 0, x0 = P/q − D·y0
		dv = gy0 - r.D*gx0
	default: // x0 optimal; x1 absorbs the budget change
		dv = gy0 - r.q*r.D/r.p*gx1
	}
	return x0, x1, dv
}

// newtonRoot finds the root of the increasing function f on [lo, hi],
// where f(lo) < 0 < f(hi), by Newton steps from x that fall back to
// bisection whenever a step leaves the bracket.
func newtonRoot(f func(float64) (float64, float64), lo, hi, x float64) float64 {
	if !(x > lo && x < hi) {
		x = lo + (hi-lo)/2
	}
	for range 200 {
		fx, dfx := f(x)
		if fx == 0 {
			return x
		}
		if fx < 0 {
			lo = x
		} else {
			hi = x
		}
		nx := x - fx/dfx
		if !(nx > lo && nx < hi) {
			nx = lo + (hi-lo)/2
		}
		if math.Abs(nx-x) <= 1e-15*math.Abs(x) || hi-lo <= 1e-15*math.Abs(hi) || nx == x {
			return nx
		}
		x = nx
	}
	return x
}

// outerGrid is the number of cells in which V' is sampled.
const outerGrid = 8

// outer minimises V(y0) over [0, ymax].
func (r *reduced) outer(ymax float64) float64 {
	best, bestVal := 0.0, math.Inf(1)
	try := func(y float64) {
		x0, x1, _ := r.inner(y)
		if v := r.obj(x0, y, x1); v < bestVal || (v == bestVal && y < best) {
			best, bestVal = y, v
		}
	}
	dv := func(y float64) float64 { _, _, d := r.inner(y); return d }
	prevY, prevD := 0.0, dv(0)
	if !(prevD < 0) {
		try(0)
	}
	for i := 1; i <= outerGrid; i++ {
		y := ymax * float64(i) / outerGrid
		if i == outerGrid {
			y = ymax
		}
		d := dv(y)
		if prevD < 0 && !(d < 0) {
			try(brentRoot(dv, prevY, y, prevD, d))
		}
		prevY, prevD = y, d
	}
	if prevD < 0 {
		try(ymax)
	}
	return best
}

// brentRoot finds a root of f in [a, b] with f(a) < 0 ≤ f(b) by Brent's
// method (inverse quadratic interpolation, secant and bisection).
func brentRoot(f func(float64) float64, a, b, fa, fb float64) float64 {
	if fb == 0 {
		return b
	}
	if math.IsInf(fa, -1) {
		// Move a inward until f is finite, keeping the bracket.
		for range 200 {
			m := a + (b-a)/2
			fm := f(m)
			if fm >= 0 {
				b, fb = m, fm
			} else {
				a, fa = m, fm
			}
			if !math.IsInf(fa, -1) || b-a <= 1e-300 {
				break
			}
		}
		if math.IsInf(fa, -1) {
			return b
		}
	}
	if math.IsInf(fb, 1) {
		for range 200 {
			m := a + (b-a)/2
			fm := f(m)
			if fm >= 0 {
				b, fb = m, fm
			} else {
				a, fa = m, fm
			}
			if !math.IsInf(fb, 1) {
				break
			}
		}
	}
	c, fc := a, fa
	d := b - a
	e := d
	for range 200 {
		if (fb > 0) == (fc > 0) {
			c, fc = a, fa
			d = b - a
			e = d
		}
		if math.Abs(fc) < math.Abs(fb) {
			a, b, c = b, c, b
			fa, fb, fc = fb, fc, fb
		}
		tol := 2*2.2e-16*math.Abs(b) + 1e-300
		m := (c - b) / 2
		if math.Abs(m) <= tol || fb == 0 {
			return b
		}
		if math.Abs(e) >= tol && math.Abs(fa) > math.Abs(fb) {
			s := fb / fa
			var p, q float64
			if a == c {
				p = 2 * m * s
				q = 1 - s
			} else {
				qq := fa / fc
				rr := fb / fc
				p = s * (2*m*qq*(qq-rr) - (b-a)*(rr-1))
				q = (qq - 1) * (rr - 1) * (s - 1)
			}
			if p > 0 {
				q = -q
			} else {
				p = -p
			}
			if 2*p < math.Min(3*m*q-math.Abs(tol*q), math.Abs(e*q)) {
				e = d
				d = p / q
			} else {
				d = m
				e = d
			}
		} else {
			d = m
			e = d
		}
		a, fa = b, fb
		if math.Abs(d) > tol {
			b += d
		} else if m > 0 {
			b += tol
		} else {
			b -= tol
		}
		fb = f(b)
	}
	return b
}

// minSegment minimises a convex function of t ∈ [lo, hi] given its
// derivative.
func minSegment(dphi func(float64) float64, lo, hi float64) float64 {
	if !(hi > lo) {
		return lo
	}
	dlo := dphi(lo)
	if !(dlo < 0) {
		return lo
	}
	dhi := dphi(hi)
	if !(dhi > 0) {
		return hi
	}
	return brentRoot(dphi, lo, hi, dlo, dhi)
}

// polish runs rounds of exact line searches along the two coordinate
// segments that the nested search does not already optimise exactly
// (x1 fixed, and x0 fixed), keeping only strict improvements.
func (r *reduced) polish(x0, y0, x1 float64) (float64, float64, float64) {
	if r.D == 0 {
		return x0, y0, x1
	}
	best := r.obj(x0, y0, x1)
	for range 3 {
		improved := false
		// x1 fixed: x0 + D·y0 = R, y0 = (R − x0)/D, x0 ∈ [R/d, R].
		rr := (r.P - r.p*x1) / r.q
		t := minSegment(func(t float64) float64 {
			gx0, gy0, _ := r.grad(t, (rr-t)/r.D, x1)
			return gx0 - gy0/r.D
		}, rr/(r.D+1), rr)
		if ny := math.Max(0, (rr-t)/r.D); ny <= t {
			if v := r.obj(t, ny, x1); v < best {
				x0, y0, best, improved = t, ny, v, true
			}
		}
		// x0 fixed: D·q·y0 + p·x1 = P − q·x0, y0 ∈ [0, min(x0, (P − q·x0)/(q·D))].
		rest := r.P - r.q*x0
		t = minSegment(func(t float64) float64 {
			_, gy0, gx1 := r.grad(x0, t, r.x1Of(x0, t))
			return gy0 - r.q*r.D/r.p*gx1
		}, 0, math.Max(0, math.Min(x0, rest/(r.q*r.D))))
		nx1 := r.x1Of(x0, t)
		if v := r.obj(x0, t, nx1); v < best {
			y0, x1, best, improved = t, nx1, v, true
		}
		if !improved {
			break
		}
	}
	return x0, y0, x1
}
