package marvell

import (
	"math"
	"math/rand/v2"
)

// This file holds the independent reference methods the tests compare
// Solve against: a brute-force grid over the constraint surface, a generic
// Nelder–Mead local search with random restarts, and a re-implementation
// of the authors' alternating method with golden-section line searches.
// None of them shares code with the solver.

// fromShares maps budget shares (s10, s20, s11, s21 ≥ 0, summing to 1) to
// λ's on the constraint.
func fromShares(pr Problem, s [4]float64) (l10, l20, l11, l21 float64) {
	q, p, dm := 1-pr.Pos, pr.Pos, float64(pr.D-1)
	l10 = s[0] * pr.Power / q
	l11 = s[2] * pr.Power / p
	if pr.D > 1 {
		l20 = s[1] * pr.Power / (q * dm)
		l21 = s[3] * pr.Power / (p * dm)
	}
	return
}

// directObjective evaluates the METHODS §4 formula literally (no rearrangement),
// +Inf when infeasible for the ordering constraints.
func directObjective(pr Problem, l10, l20, l11, l21 float64) float64 {
	if l20 > l10*(1+1e-12) || l21 > l11*(1+1e-12) || l10 < 0 || l20 < 0 || l11 < 0 || l21 < 0 {
		return math.Inf(1)
	}
	dm := float64(pr.D - 1)
	u, v, g := pr.U, pr.V, pr.G
	f := (l10+u+g)/(l11+v) + (l11+v+g)/(l10+u)
	if pr.D > 1 {
		if l20+u == 0 && l21+v == 0 {
			f += 2 * dm // identical point masses: the ratios are 1
		} else {
			f += dm*(l20+u)/(l21+v) + dm*(l21+v)/(l20+u)
		}
	}
	if math.IsNaN(f) {
		return math.Inf(1)
	}
	return f
}

// bruteForce evaluates every point of a simplex grid with n steps per
// share and returns the best objective.
func bruteForce(pr Problem, n int) float64 {
	best := math.Inf(1)
	for i := 0; i <= n; i++ {
		for j := 0; i+j <= n; j++ {
			for k := 0; i+j+k <= n; k++ {
				l := n - i - j - k
				s := [4]float64{float64(i) / float64(n), float64(j) / float64(n), float64(k) / float64(n), float64(l) / float64(n)}
				a, b, c, d := fromShares(pr, s)
				if f := directObjective(pr, a, b, c, d); f < best {
					best = f
				}
			}
		}
	}
	return best
}

// softmaxShares maps z ∈ R⁴ to shares.
func softmaxShares(z [4]float64) [4]float64 {
	m := math.Max(math.Max(z[0], z[1]), math.Max(z[2], z[3]))
	var s [4]float64
	var t float64
	for i := range z {
		s[i] = math.Exp(z[i] - m)
		t += s[i]
	}
	for i := range s {
		s[i] /= t
	}
	return s
}

// nelderMead minimises f over R⁴ from x0 with a simplex of size step.
func nelderMead(f func([4]float64) float64, x0 [4]float64, step float64, iters int) float64 {
	var pts [5][4]float64
	var val [5]float64
	for i := range pts {
		pts[i] = x0
		if i > 0 {
			pts[i][i-1] += step
		}
		val[i] = f(pts[i])
	}
	for range iters {
		// sort
		for i := 1; i < 5; i++ {
			for j := i; j > 0 && val[j] < val[j-1]; j-- {
				val[j], val[j-1] = val[j-1], val[j]
				pts[j], pts[j-1] = pts[j-1], pts[j]
			}
		}
		var c [4]float64
		for i := range 4 {
			for k := range 4 {
				c[k] += pts[i][k] / 4
			}
		}
		at := func(t float64) [4]float64 {
			var x [4]float64
			for k := range 4 {
				x[k] = c[k] + t*(pts[4][k]-c[k])
			}
			return x
		}
		xr := at(-1)
		fr := f(xr)
		switch {
		case fr < val[0]:
			xe := at(-2)
			if fe := f(xe); fe < fr {
				pts[4], val[4] = xe, fe
			} else {
				pts[4], val[4] = xr, fr
			}
		case fr < val[3]:
			pts[4], val[4] = xr, fr
		default:
			xc := at(0.5)
			if fc := f(xc); fc < val[4] {
				pts[4], val[4] = xc, fc
			} else {
				for i := 1; i < 5; i++ {
					for k := range 4 {
						pts[i][k] = pts[0][k] + 0.5*(pts[i][k]-pts[0][k])
					}
					val[i] = f(pts[i])
				}
			}
		}
	}
	best := val[0]
	for _, v := range val {
		best = math.Min(best, v)
	}
	return best
}

// nmRestarts runs Nelder–Mead on the softmax share parametrisation from
// `restarts` random starts and returns the best objective.
func nmRestarts(pr Problem, rng *rand.Rand, restarts int) float64 {
	f := func(z [4]float64) float64 {
		a, b, c, d := fromShares(pr, softmaxShares(z))
		return directObjective(pr, a, b, c, d)
	}
	best := math.Inf(1)
	for range restarts {
		var z [4]float64
		for k := range z {
			z[k] = 4 * rng.NormFloat64()
		}
		if v := nelderMead(f, z, 1, 600); v < best {
			best = v
		}
	}
	return best
}

// golden minimises f on [a, b] by golden-section search.
func golden(f func(float64) float64, a, b float64) float64 {
	const r = 0.6180339887498949
	c, d := b-r*(b-a), a+r*(b-a)
	fc, fd := f(c), f(d)
	for range 200 {
		if b-a <= 1e-15*math.Max(1, math.Abs(b)) {
			break
		}
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - r*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + r*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}

// alternating re-implements the authors' method: fix λ₂ of the class
// with the larger variance at 0, start from a random feasible point on
// the constraint, then repeatedly fix one of the three free variables and
// line-search the other two along the constraint, stopping after 100
// rounds or when three rounds improve by less than 1e-16.
func alternating(pr Problem, rng *rand.Rand) float64 {
	if pr.Power == 0 {
		return directObjective(pr, 0, 0, 0, 0)
	}
	q, p, dm, P := 1-pr.Pos, pr.Pos, float64(pr.D-1), pr.Power
	// w = (λ₁⁰, λ₂⁰, λ₁¹, λ₂¹); coefficient of each in the constraint.
	coef := [4]float64{q, q * dm, p, p * dm}
	free := []int{0, 1, 2} // u ≤ v: λ₂¹ = 0
	if pr.U > pr.V {
		free = []int{0, 2, 3} // λ₂⁰ = 0
	}
	if pr.D == 1 || pr.U == pr.V {
		free = []int{0, 2}
	}
	obj := func(w [4]float64) float64 { return directObjective(pr, w[0], w[1], w[2], w[3]) }
	// Random feasible start: random shares over the free variables,
	// retried until the ordering holds.
	var w [4]float64
	for range 10000 {
		w = [4]float64{}
		var s [4]float64
		var t float64
		for _, i := range free {
			s[i] = rng.ExpFloat64()
			t += s[i]
		}
		for _, i := range free {
			w[i] = s[i] / t * P / coef[i]
		}
		if !math.IsInf(obj(w), 1) {
			break
		}
	}
	cur := obj(w)
	small := 0
	for range 100 {
		for _, fix := range free {
			var mv []int
			for _, i := range free {
				if i != fix {
					mv = append(mv, i)
				}
			}
			if len(mv) < 2 {
				// d = 1: one free pair, move it directly.
				mv = free
			}
			i, j := mv[0], mv[1]
			budget := coef[i]*w[i] + coef[j]*w[j]
			hi := budget / coef[i]
			line := func(t float64) [4]float64 {
				x := w
				x[i] = t
				x[j] = math.Max(0, (budget-coef[i]*t)/coef[j])
				return x
			}
			t := golden(func(t float64) float64 { return obj(line(t)) }, 0, hi)
			if x := line(t); obj(x) <= obj(w) {
				w = x
			}
		}
		n := obj(w)
		if cur-n < 1e-16 {
			small++
			if small >= 3 {
				break
			}
		} else {
			small = 0
		}
		cur = n
	}
	return obj(w)
}
