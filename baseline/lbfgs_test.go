package baseline

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/optimize"

	"github.com/splitguard/splitguard/data"
)

// gonumConverger adapts a converged function of the package's solver to
// gonum's Converger.
type gonumConverger struct {
	converged func(f float64, grad []float64) stopReason
}

func (gonumConverger) Init(int) {}

func (c gonumConverger) Converged(loc *optimize.Location) optimize.Status {
	switch c.converged(loc.F, loc.Gradient) {
	case gradientThreshold:
		return optimize.GradientThreshold
	case functionConvergence:
		return optimize.FunctionConvergence
	case failure:
		return optimize.Failure
	}
	return optimize.NotTerminated
}

// gonumStop maps gonum's status to the package's reasons.
func gonumStop(s optimize.Status) stopReason {
	switch s {
	case optimize.GradientThreshold:
		return gradientThreshold
	case optimize.FunctionConvergence:
		return functionConvergence
	case optimize.IterationLimit:
		return iterationLimit
	case optimize.FunctionNegativeInfinity:
		return functionNegativeInfinity
	case optimize.NotTerminated:
		return notTerminated
	}
	return failure
}

// runGonum minimises with gonum's own L-BFGS from x0, with a fresh
// converger from newConv, and returns the final point, its major
// iterations and why it stopped.
func runGonum(eval func(x, grad []float64) float64, x0 []float64, maxIter int, newConv func() func(float64, []float64) stopReason) ([]float64, int, stopReason) {
	g := make([]float64, len(x0))
	p := optimize.Problem{
		Func: func(x []float64) float64 { return eval(x, g) },
		Grad: func(grad, x []float64) { eval(x, grad) },
	}
	settings := &optimize.Settings{MajorIterations: maxIter, GradientThreshold: math.NaN(),
		Converger: gonumConverger{newConv()}}
	r, _ := optimize.Minimize(p, x0, settings, &optimize.LBFGS{})
	return r.X, r.Stats.MajorIterations, gonumStop(r.Status)
}

// TestLBFGSMatchesGonum: the package's L-BFGS visits the same iterates as
// gonum's optimize.LBFGS (a second implementation, the one it replaced),
// to the bit, on functions that take its line search through growing,
// shrinking and failing steps, and stops at the same iteration for the
// same reason.
func TestLBFGSMatchesGonum(t *testing.T) {
	rosenbrock := func(x, grad []float64) float64 {
		var f float64
		clear(grad)
		for i := 0; i+1 < len(x); i++ {
			a, b := 1-x[i], x[i+1]-x[i]*x[i]
			f += a*a + 100*b*b
			grad[i] += -2*a - 400*x[i]*b
			grad[i+1] += 200 * b
		}
		return f
	}
	// A badly scaled quadratic: steps of unit length are far too long
	// along some axes, far too short along others.
	quadratic := func(x, grad []float64) float64 {
		var f float64
		for i, v := range x {
			c := math.Pow(10, float64(i%7-3))
			f += 0.5 * c * (v - 1) * (v - 1)
			grad[i] = c * (v - 1)
		}
		return f
	}
	// Absolute value smoothed only a little: the fit ends on gonum's own
	// gradient test (inf-norm below 1e-12) at the bottom of the kink.
	kink := func(x, grad []float64) float64 {
		var f float64
		for i, v := range x {
			f += math.Sqrt(v*v + 1e-18)
			grad[i] = v / math.Sqrt(v*v+1e-18)
		}
		return f
	}
	// The absolute value itself: the line search ends by failing once no
	// step lowers the loss.
	abs := func(x, grad []float64) float64 {
		var f float64
		for i, v := range x {
			f += math.Abs(v) + 0.1*v*v*v*v
			grad[i] = 0.4 * v * v * v
			if v > 0 {
				grad[i]++
			} else if v < 0 {
				grad[i]--
			}
		}
		return f
	}
	gradConv := func(tol float64) func() func(float64, []float64) stopReason {
		return func() func(float64, []float64) stopReason {
			fc := funcConverge{absolute: 1e-10, relative: 1e-10, iterations: 20}
			return func(f float64, grad []float64) stopReason {
				small := true
				for _, g := range grad {
					small = small && math.Abs(g) < tol
				}
				if small {
					return gradientThreshold
				}
				return fc.converged(f)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		f       func(x, grad []float64) float64
		x0      []float64
		maxIter int
		conv    func() func(float64, []float64) stopReason
		stop    stopReason // why gonum stops: each case takes another way out
	}{
		{"rosenbrock, to the gradient", rosenbrock, []float64{-1.2, 1, -1.2, 1, 0.5, -0.3}, 500, gradConv(1e-9), gradientThreshold},
		{"rosenbrock, iteration limit", rosenbrock, []float64{-1.2, 1, 2, 3}, 25, gradConv(1e-12), iterationLimit},
		{"badly scaled quadratic", quadratic, []float64{5, -3, 2, 8, -1, 0, 4, 9, -7, 3, 1, 2, 6, -5, 3, 2, 1, 0, -1, -2}, 300, gradConv(1e-10), functionConvergence},
		{"kink, gonum's gradient test", kink, []float64{0.7, -0.2, 0.05}, 300, gradConv(0), gradientThreshold},
		{"absolute value, line search fails", abs, []float64{0.7, -0.2, 0.05, 1.5}, 300, gradConv(0), failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantIt, wantWhy := runGonum(tc.f, tc.x0, tc.maxIter, tc.conv)
			got := append([]float64(nil), tc.x0...)
			var m lbfgs
			it, why, _ := m.minimise(tc.f, got, tc.maxIter, tc.conv())
			if wantWhy != tc.stop {
				t.Fatalf("gonum stopped by %d, not %d: the case no longer covers its way out", wantWhy, tc.stop)
			}
			if it != wantIt || why != wantWhy {
				t.Errorf("%d iterations, stopped by %d; gonum: %d, %d", it, why, wantIt, wantWhy)
			}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("x[%d] = %v, gonum %v", k, got[k], want[k])
				}
			}
			// The same solver again (its history kept from this fit) gives
			// the same fit.
			again := append([]float64(nil), tc.x0...)
			m.minimise(tc.f, again, tc.maxIter, tc.conv())
			for k := range got {
				if again[k] != got[k] {
					t.Fatalf("a second fit with the same solver: x[%d] = %v, first %v", k, again[k], got[k])
				}
			}
		})
	}
}

// TestMinimiseMatchesGonum: the baseline's rescaled fit gives, to the bit,
// the weights, iterations and verdict of the same fit by gonum's L-BFGS
// (the code it replaced), along a warm-started path of λ and tolerances
// as Fit walks it.
func TestMinimiseMatchesGonum(t *testing.T) {
	d := table(3000, 6, 40, 4, 11)
	des := newDesign(d.X, d.Labels, len(d.IDs))
	theta := make([]float64, des.p+1)
	ref := make([]float64, des.p+1)
	for _, step := range []struct {
		lambda, tol float64
		maxIter     int
	}{{1e-1, 1e-5, 300}, {1e-2, 1e-5, 300}, {1e-3, 1e-5, 300}, {1e-3, 1e-7, 300}, {1e-4, 1e-7, 12}} {
		it, conv, err := des.minimise(context.Background(), theta, step.lambda, step.maxIter, step.tol)
		if err != nil {
			t.Fatal(err)
		}
		wantIt, wantConv := gonumMinimise(des, ref, step.lambda, step.maxIter, step.tol)
		if it != wantIt || conv != wantConv {
			t.Errorf("λ %g, tolerance %g: %d iterations, converged %v; gonum %d, %v", step.lambda, step.tol, it, conv, wantIt, wantConv)
		}
		for k := range ref {
			if theta[k] != ref[k] {
				t.Fatalf("λ %g, tolerance %g: θ[%d] = %v, gonum %v", step.lambda, step.tol, k, theta[k], ref[k])
			}
		}
	}
}

// gonumMinimise is design.minimise as it was with gonum's optimiser.
func gonumMinimise(d *design, theta []float64, lambda float64, maxIter int, gradTol float64) (int, bool) {
	scale := d.hessianDiagonal(theta, lambda)
	for k, h := range scale {
		scale[k] = 1 / math.Sqrt(h)
	}
	u := make([]float64, len(theta))
	for k, v := range theta {
		u[k] = v / scale[k]
	}
	x, g := make([]float64, len(theta)), make([]float64, len(theta))
	eval := func(uu, grad []float64) float64 {
		for k, v := range uu {
			x[k] = scale[k] * v
		}
		f := d.objective(x, g, lambda)
		for k, v := range g {
			grad[k] = scale[k] * v
		}
		return f
	}
	conv := func() func(float64, []float64) stopReason {
		c := scaledConverge{ctx: context.Background(), scale: scale, tol: gradTol,
			fc: funcConverge{absolute: 1e-10, relative: 1e-10, iterations: 20}}
		return c.converged
	}
	r, it, why := runGonum(eval, u, maxIter, conv)
	for k, v := range r {
		theta[k] = scale[k] * v
	}
	return it, why == gradientThreshold || why == functionConvergence
}

// TestFitClosedFormTwoIDs: one categorical column of two ids, A with
// 100 rows of which 70 positive and B with 100 rows of which 30 positive,
// is symmetric under swapping the ids and the labels, so the optimum has
// b = 0 and w_B = −w_A, and w_A is the root of the one-variable
// optimality condition ½(σ(w) − 0.7) + λw = 0, found here by bisection
// on that condition alone.
func TestFitClosedFormTwoIDs(t *testing.T) {
	x := &data.Features{Rows: 200, NumCat: 1, Cardinality: []int{2}}
	d := &data.Dataset{X: x, IDs: make([]uint64, 200), Labels: make([]uint8, 200)}
	for i := range 200 {
		d.IDs[i] = uint64(i)
		id, k := i/100, i%100
		x.Cat = append(x.Cat, int32(id))
		if (id == 0 && k < 70) || (id == 1 && k < 30) {
			d.Labels[i] = 1
		}
	}
	for _, lambda := range []float64{1e-1, 1e-2, 1e-3} {
		lo, hi := 0.0, 20.0 // the condition is −0.1 at 0 and positive at 20
		for range 200 {
			mid := (lo + hi) / 2
			if 0.5*(1/(1+math.Exp(-mid))-0.7)+lambda*mid > 0 {
				hi = mid
			} else {
				lo = mid
			}
		}
		wA := (lo + hi) / 2
		r, err := Fit(d, d, nil, Options{Lambdas: []float64{lambda}})
		if err != nil {
			t.Fatal(err)
		}
		// The fit stops at a gradient below 1e-7; the curvature of the
		// objective is at least λ, so the weights are within 1e-7/λ.
		tol := 2e-7 / lambda
		if len(r.W) != 2 || math.Abs(r.W[0]-wA) > tol || math.Abs(r.W[1]+wA) > tol || math.Abs(r.B) > tol {
			t.Errorf("λ %g: w = %v, b = %v; closed form w = (%v, %v), b = 0", lambda, r.W, r.B, wA, -wA)
		}
	}
}
