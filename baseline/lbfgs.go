package baseline

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/floats"
)

// lbfgs is the L-BFGS method of gonum v0.17.0 (optimize.LBFGS with its
// default history of 15 pairs and Bisection line search of curvature
// factor 0.9, driven as optimize.Minimize drives it on one task), written
// out so that the baseline's fit keeps its results while leaving out the
// driver's costs: gonum zeroes 30 history vectors of the problem's
// dimension at the start of every fit and sweeps all 15 pairs in every
// iteration, the empty ones too (an empty pair adds exactly zero, so
// skipping it changes no value), hands every evaluation between three
// goroutines over channels, and copies the point and the gradient at
// each evaluation and each iteration. The vector operations are gonum's
// own (floats), in the same order, so every iterate is the same number;
// TestLBFGSMatchesGonum checks that against gonum's optimiser itself.
//
// The history is allocated once and kept across fits (a design fits a
// path of λ, each from a fresh history).
type lbfgs struct {
	dim  int
	s, y [][]float64 // the last lbfgsStore steps and gradient changes, as a ring
	rho  []float64   // 1/(sᵀy) of each pair
	a    []float64   // the two-loop recursion's coefficients
	used int         // pairs filled since the fit began
	next int         // the ring slot the next pair goes to

	xPrev, gPrev []float64 // the last major iterate and its gradient
	x0, dir      []float64 // the line search's start and direction
	x, g         []float64 // the point being evaluated and its gradient
	f            float64

	ls bisection
}

// lbfgsStore is gonum's default history length.
const lbfgsStore = 15

// stopReason says why a fit of [lbfgs.minimise] ended.
type stopReason int

// The reasons, as gonum's optimize.Status of the same names.
const (
	notTerminated stopReason = iota
	gradientThreshold
	functionConvergence
	iterationLimit
	functionNegativeInfinity
	failure
)

// gonumGradientAbsTol is the inf-norm of the gradient below which gonum's
// local optimiser stops on its own (its defaultGradientAbsTol).
const gonumGradientAbsTol = 1e-12

// errNoProgress and errNonDescent are gonum's ErrNoProgress and
// ErrNonDescentDirection; errLinesearch is its ErrLinesearcherFailure.
var (
	errNoProgress = errors.New("linesearch: no change in location after Linesearcher step")
	errNonDescent = errors.New("linesearch: non-descent search direction")
	errLinesearch = errors.New("linesearch: failed to converge")
)

// resize makes the solver's vectors dim long, allocating only when
// they are too short.
func (m *lbfgs) resize(dim int) {
	m.dim = dim
	if cap(m.x) >= dim && len(m.s) == lbfgsStore {
		for _, v := range []*[]float64{&m.xPrev, &m.gPrev, &m.x0, &m.dir, &m.x, &m.g} {
			*v = (*v)[:dim]
		}
		for k := range lbfgsStore {
			m.s[k], m.y[k] = m.s[k][:dim], m.y[k][:dim]
		}
		return
	}
	for _, v := range []*[]float64{&m.xPrev, &m.gPrev, &m.x0, &m.dir, &m.x, &m.g} {
		*v = make([]float64, dim)
	}
	m.s, m.y = make([][]float64, lbfgsStore), make([][]float64, lbfgsStore)
	for k := range lbfgsStore {
		m.s[k], m.y[k] = make([]float64, dim), make([]float64, dim)
	}
	m.rho, m.a = make([]float64, lbfgsStore), make([]float64, lbfgsStore)
}

// minimise runs L-BFGS from x (updated in place to the last major
// iterate) on the function eval, which returns f(x) and writes ∇f(x)
// into its second argument. converged is asked at every major iterate
// (the start included) with its value and gradient, before the
// iteration limit maxIter (the start counts as one iteration, as in
// gonum) is tested. It returns the major iterations made, why it
// stopped, and the error of a failed line search or of a start whose
// loss or gradient is not finite.
func (m *lbfgs) minimise(eval func(x, grad []float64) float64, x []float64, maxIter int,
	converged func(f float64, grad []float64) stopReason) (int, stopReason, error) {
	m.resize(len(x))
	copy(m.x, x)
	m.f = eval(m.x, m.g)
	if math.IsInf(m.f, 1) || math.IsNaN(m.f) {
		return 0, failure, errors.New("the starting loss is not finite")
	}
	for _, v := range m.g {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, failure, errors.New("the starting gradient is not finite")
		}
	}
	iters := 0
	// major records the point m.x as a major iterate and says whether
	// the fit ends there.
	major := func(first bool) stopReason {
		iters++
		copy(x, m.x)
		if math.IsInf(m.f, -1) {
			return functionNegativeInfinity
		}
		if r := converged(m.f, m.g); r != notTerminated {
			return r
		}
		if maxIter > 0 && iters >= maxIter {
			return iterationLimit
		}
		if !first && floats.Norm(m.g, math.Inf(1)) < gonumGradientAbsTol {
			return gradientThreshold
		}
		return notTerminated
	}
	if r := major(true); r != notTerminated {
		return iters, r, nil
	}
	m.used, m.next = 0, 0
	first := true
	for {
		// A new line search from the major iterate m.x.
		copy(m.x0, m.x)
		var step float64
		if first {
			first = false
			step = m.initDirection()
		} else {
			step = m.nextDirection()
		}
		projGrad := floats.Dot(m.g, m.dir)
		if projGrad >= 0 {
			return iters, failure, errNonDescent
		}
		m.ls.init(m.f, projGrad, step)
		if err := m.moveTo(step); err != nil {
			return iters, failure, err
		}
		for {
			// Each point is evaluated once, value and gradient together
			// (gonum asks for the value, then for the gradient of the
			// same point, which the baseline's evaluation cache answered
			// from the same pass).
			m.f = eval(m.x, m.g)
			done, next, err := m.ls.iterate(m.f, floats.Dot(m.g, m.dir))
			if err != nil {
				return iters, failure, err
			}
			if done {
				break
			}
			if err := m.moveTo(next); err != nil {
				return iters, failure, err
			}
		}
		if r := major(false); r != notTerminated {
			return iters, r, nil
		}
	}
}

// moveTo sets the point to x0 + step·dir, failing when that is x0.
func (m *lbfgs) moveTo(step float64) error {
	floats.AddScaledTo(m.x, m.x0, step, m.dir)
	if floats.Equal(m.x0, m.x) {
		return errNoProgress
	}
	return nil
}

// initDirection is gonum's LBFGS.InitDirection: steepest descent, with
// a first step of unit length.
func (m *lbfgs) initDirection() float64 {
	copy(m.xPrev, m.x)
	copy(m.gPrev, m.g)
	copy(m.dir, m.g)
	floats.Scale(-1, m.dir)
	return 1 / floats.Norm(m.dir, 2)
}

// nextDirection is gonum's LBFGS.NextDirection over the filled pairs
// only: the new pair enters the ring, then the two-loop recursion.
func (m *lbfgs) nextDirection() float64 {
	k := m.next
	y, s := m.y[k], m.s[k]
	floats.SubTo(y, m.g, m.gPrev)
	floats.SubTo(s, m.x, m.xPrev)
	sDotY := floats.Dot(s, y)
	m.rho[k] = 1 / sDotY
	m.next = (k + 1) % lbfgsStore
	m.used = min(m.used+1, lbfgsStore)

	copy(m.xPrev, m.x)
	copy(m.gPrev, m.g)
	copy(m.dir, m.g)
	// Newest to oldest.
	for i := range m.used {
		idx := (m.next - 1 - i + 2*lbfgsStore) % lbfgsStore
		m.a[idx] = m.rho[idx] * floats.Dot(m.s[idx], m.dir)
		floats.AddScaled(m.dir, -m.a[idx], m.y[idx])
	}
	gamma := sDotY / floats.Dot(y, y)
	floats.Scale(gamma, m.dir)
	// Oldest to newest.
	for i := m.used - 1; i >= 0; i-- {
		idx := (m.next - 1 - i + 2*lbfgsStore) % lbfgsStore
		beta := m.rho[idx] * floats.Dot(m.y[idx], m.dir)
		floats.AddScaled(m.dir, m.a[idx]-beta, m.s[idx])
	}
	floats.Scale(-1, m.dir)
	return 1
}

// bisection is gonum's Bisection line search (curvature factor 0.9),
// asked at each point for the value and the directional derivative
// together.
type bisection struct {
	minStep, maxStep, currStep float64
	initF, minF, maxF          float64
	initGrad                   float64
}

// bisectionCurvature is gonum's defaultBisectionCurvature.
const bisectionCurvature = 0.9

// init starts a line search from value f and directional derivative g
// (negative) with a first step.
func (b *bisection) init(f, g, step float64) {
	b.minStep, b.maxStep, b.currStep = 0, math.Inf(1), step
	b.initF, b.minF, b.maxF = f, f, math.NaN()
	b.initGrad = g
}

// iterate takes the value f and directional derivative g at the current
// step and says whether the step is accepted, else the next step to try.
// It makes gonum's two calls (the value's, then the derivative's when the
// value is low enough) in one.
func (b *bisection) iterate(f, g float64) (done bool, next float64, err error) {
	minF := b.initF
	if b.maxF < minF {
		minF = b.maxF
	}
	if b.minF < minF {
		minF = b.minF
	}
	// gonum's value-only call (a NaN value is not low enough).
	if !(f <= minF) {
		if math.IsInf(b.maxStep, 1) {
			b.maxStep = b.currStep
			b.maxF = f
			return b.nextStep((b.minStep + b.maxStep) / 2)
		}
		if b.minF <= b.maxF {
			b.maxStep = b.currStep
			b.maxF = f
		} else {
			b.minStep = b.currStep
			b.minF = f
		}
		return b.nextStep((b.minStep + b.maxStep) / 2)
	}
	// gonum's derivative call, with the minimum taken before it (the
	// fields it reads did not change in between): its strong Wolfe test
	// with no decrease asked is f ≤ minF, known here, and the curvature.
	if math.Abs(g) < bisectionCurvature*math.Abs(b.initGrad) {
		return true, b.currStep, nil
	}
	if math.IsInf(b.maxStep, 1) {
		if g > 0 {
			b.maxStep = b.currStep
			b.maxF = f
			return b.nextStep((b.minStep + b.maxStep) / 2)
		}
		b.minStep = b.currStep
		b.minF = f
		return b.nextStep(b.currStep * 2)
	}
	if g < 0 {
		b.minStep = b.currStep
		b.minF = f
	} else {
		b.maxStep = b.currStep
		b.maxF = f
	}
	return b.nextStep((b.minStep + b.maxStep) / 2)
}

// nextStep moves to step, failing where it is the current one.
func (b *bisection) nextStep(step float64) (bool, float64, error) {
	if b.currStep == step {
		return false, 0, errLinesearch
	}
	b.currStep = step
	return false, step, nil
}
