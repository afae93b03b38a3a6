package baseline

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
)

// table builds n rows with numCat categorical columns of cardinality card
// and numDense numeric columns, labels drawn from a logistic model.
func table(n, numCat, card, numDense int, seed uint64) *data.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := &data.Features{Rows: n, NumCat: numCat, NumDense: numDense, Cardinality: make([]int, numCat)}
	for j := range x.Cardinality {
		x.Cardinality[j] = card
	}
	d := &data.Dataset{IDs: make([]uint64, n), X: x, Labels: make([]uint8, n)}
	for i := range n {
		d.IDs[i] = uint64(i)
		z := -0.5
		for j := range numCat {
			c := rng.IntN(card)
			x.Cat = append(x.Cat, int32(c))
			z += 0.8 * float64(c%2*2-1) * float64(j+1) / float64(numCat)
		}
		for k := range numDense {
			v := rng.Float64()
			x.Dense = append(x.Dense, float32(v))
			z += 3 * (v - 0.5) * float64(k%2*2-1)
		}
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			d.Labels[i] = 1
		}
	}
	return d
}

// newton solves the same regularised problem by Newton's method with a
// dense Hessian, written out independently of the package's code: the
// one-hot and standardised design matrix is built explicitly.
func newton(d *data.Dataset, lambda float64) []float64 {
	x := d.X
	n := x.Rows
	p := x.NumDense + 1
	for _, c := range x.Cardinality {
		p += c
	}
	// Explicit design matrix with a trailing 1 for the bias.
	mean, sd := make([]float64, x.NumDense), make([]float64, x.NumDense)
	for k := range x.NumDense {
		for i := range n {
			mean[k] += float64(x.Dense[i*x.NumDense+k]) / float64(n)
		}
		for i := range n {
			v := float64(x.Dense[i*x.NumDense+k]) - mean[k]
			sd[k] += v * v / float64(n)
		}
		sd[k] = math.Sqrt(sd[k])
	}
	a := make([][]float64, n)
	for i := range n {
		row := make([]float64, p)
		off := 0
		for j, c := range x.Cardinality {
			row[off+int(x.Cat[i*x.NumCat+j])] = 1
			off += c
		}
		for k := range x.NumDense {
			row[off+k] = (float64(x.Dense[i*x.NumDense+k]) - mean[k]) / sd[k]
		}
		row[p-1] = 1
		a[i] = row
	}
	theta := make([]float64, p)
	for range 50 {
		g := make([]float64, p)
		h := make([][]float64, p)
		for r := range h {
			h[r] = make([]float64, p)
		}
		for i := range n {
			z := 0.0
			for k := range p {
				z += a[i][k] * theta[k]
			}
			s := 1 / (1 + math.Exp(-z))
			for k := range p {
				g[k] += (s - float64(d.Labels[i])) * a[i][k] / float64(n)
				for l := range p {
					h[k][l] += s * (1 - s) * a[i][k] * a[i][l] / float64(n)
				}
			}
		}
		for k := range p - 1 {
			g[k] += lambda * theta[k]
			h[k][k] += lambda
		}
		step := solve(h, g)
		for k := range p {
			theta[k] -= step[k]
		}
	}
	return theta
}

// solve solves h·s = g by Gaussian elimination with partial pivoting.
func solve(h [][]float64, g []float64) []float64 {
	p := len(g)
	m := make([][]float64, p)
	for r := range p {
		m[r] = append(append([]float64(nil), h[r]...), g[r])
	}
	for c := range p {
		piv := c
		for r := c + 1; r < p; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[piv][c]) {
				piv = r
			}
		}
		m[c], m[piv] = m[piv], m[c]
		for r := c + 1; r < p; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= p; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	s := make([]float64, p)
	for r := p - 1; r >= 0; r-- {
		v := m[r][p]
		for k := r + 1; k < p; k++ {
			v -= m[r][k] * s[k]
		}
		s[r] = v / m[r][r]
	}
	return s
}

func TestFitMatchesNewton(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		n, numCat, card, numDense int
		lambda                    float64
		unseen                    int // ids added to every column's cardinality that no row holds
	}{
		{"numeric only", 300, 0, 0, 3, 0.01, 0},
		{"categorical only", 300, 2, 4, 0, 0.05, 0},
		{"mixed", 400, 2, 3, 2, 0.001, 0},
		{"ids no row holds", 300, 2, 3, 1, 0.01, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := table(tc.n, tc.numCat, tc.card, tc.numDense, 1)
			for j := range d.X.Cardinality {
				d.X.Cardinality[j] += tc.unseen
			}
			r, err := Fit(d, d, nil, Options{Lambdas: []float64{tc.lambda}})
			if err != nil {
				t.Fatal(err)
			}
			want := newton(d, tc.lambda)
			if len(r.W)+1 != len(want) || r.Features != len(r.W) {
				t.Fatalf("%d weights (Features %d), Newton has %d", len(r.W), r.Features, len(want)-1)
			}
			got := append(append([]float64(nil), r.W...), r.B)
			for k := range want {
				if math.Abs(got[k]-want[k]) > 1e-4 {
					t.Errorf("θ[%d] = %.6f, Newton gives %.6f", k, got[k], want[k])
				}
			}
			if !r.Converged {
				t.Errorf("did not converge in %d iterations", r.Iterations)
			}
		})
	}
}

// TestGradientZeroAtOptimum checks the analytic gradient against central
// finite differences of the objective, and that it vanishes at the fit.
func TestGradientZeroAtOptimum(t *testing.T) {
	d := table(200, 2, 3, 2, 2)
	const lambda = 0.01
	r, err := Fit(d, d, nil, Options{Lambdas: []float64{lambda}})
	if err != nil {
		t.Fatal(err)
	}
	des := newDesign(d.X, d.Labels, len(d.IDs))
	theta := des.pack(r.W, r.B)
	grad := make([]float64, len(theta))
	des.objective(theta, grad, lambda)
	for k := range theta {
		fd := centralDifference(des, theta, k, lambda)
		if math.Abs(fd) > 1e-6 || math.Abs(grad[k]) > 1e-6 {
			t.Errorf("θ[%d]: gradient %.3g, finite difference %.3g at the optimum, want 0", k, grad[k], fd)
		}
	}
	// Away from the optimum the analytic gradient equals the finite difference.
	for k := range theta {
		theta[k] += 0.3
	}
	des.objective(theta, grad, lambda)
	for k := range theta {
		fd := centralDifference(des, theta, k, lambda)
		if math.Abs(fd-grad[k]) > 1e-6 {
			t.Errorf("θ[%d]: gradient %.6g, finite difference %.6g", k, grad[k], fd)
		}
	}
}

// TestSeparableAUC: a numeric column that separates the classes gives
// validation and test AUC 1, and the strongest penalty is not kept.
func TestSeparableAUC(t *testing.T) {
	mk := func(n int, off uint64) *data.Dataset {
		x := &data.Features{Rows: n, NumDense: 1}
		d := &data.Dataset{X: x}
		for i := range n {
			y := uint8(i % 2)
			d.IDs = append(d.IDs, off+uint64(i))
			d.Labels = append(d.Labels, y)
			x.Dense = append(x.Dense, float32(y)*0.5+float32(i%7)/20)
		}
		return d
	}
	r, err := Fit(mk(100, 0), mk(40, 1000), mk(40, 2000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.ValAUC != 1 || r.TestAUC != 1 {
		t.Errorf("AUCs %v/%v, want 1/1", r.ValAUC, r.TestAUC)
	}
	if r.W[0] <= 0 {
		t.Errorf("weight %v of the separating column, want > 0", r.W[0])
	}
	if r.LambdasFitted != len(DefaultLambdas) {
		t.Errorf("fitted %d λ, want the whole grid of %d", r.LambdasFitted, len(DefaultLambdas))
	}
}

// TestUnseenIDsGetZero: ids that only rows past the cap hold get weight
// exactly 0 (their penalised optimum), the full layout is kept, and
// scoring a split that holds them works.
func TestUnseenIDsGetZero(t *testing.T) {
	d := table(400, 2, 5, 1, 4)
	// The first 100 rows never hold id 4 of column 0; later rows do.
	for i := range 100 {
		if d.X.Cat[i*2] == 4 {
			d.X.Cat[i*2] = 0
		}
	}
	r, err := Fit(d, d, d, Options{MaxRows: 100, Lambdas: []float64{0.01}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.W) != 2*5+1 || r.W[4] != 0 {
		t.Errorf("%d weights, weight of the unseen id %v; want 11 and exactly 0", len(r.W), r.W[4])
	}
	if r.W[0] == 0 || math.IsNaN(r.TestAUC) {
		t.Errorf("weight of a seen id %v, test AUC %v", r.W[0], r.TestAUC)
	}
}

// TestSoftplusSigmoidExp checks the shared-exponential forms against the
// plain formulas log(1+e^z) and 1/(1+e^−z) where those are accurate.
func TestSoftplusSigmoidExp(t *testing.T) {
	for _, z := range []float64{-30, -3.5, -0.25, 0, 1e-9, 0.7, 4, 30} {
		e := math.Exp(-math.Abs(z))
		sp, sg := softplusExp(z, e), sigmoidExp(z, e)
		if want := math.Log(1 + math.Exp(z)); math.Abs(sp-want) > 1e-12*max(1, want) {
			t.Errorf("softplus(%v) = %v, want %v", z, sp, want)
		}
		if want := 1 / (1 + math.Exp(-z)); math.Abs(sg-want) > 1e-15 {
			t.Errorf("sigmoid(%v) = %v, want %v", z, sg, want)
		}
	}
}

// TestPathStopsPastPeak: on a small training set with many noise
// categories the validation AUC peaks and falls along the λ path; the
// path stops there, and the kept λ has the best AUC of those fitted
// (a separable problem, whose AUC never falls, fits the whole grid).
func TestPathStopsPastPeak(t *testing.T) {
	lambdas := []float64{1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}
	train := table(80, 6, 12, 1, 8)
	val := table(2000, 6, 12, 1, 9)
	r, err := Fit(train, val, nil, Options{Lambdas: lambdas})
	if err != nil {
		t.Fatal(err)
	}
	if r.LambdasFitted >= len(lambdas) {
		t.Fatalf("fitted all %d λ; want the path to stop past the peak", r.LambdasFitted)
	}
	// A cold start reaches the same optimum as the warm one to the
	// optimiser's tolerance, which leaves the weights equal to about
	// 1e-5 (gradient 1e-7, curvature λ): enough to swap a near-tie, so
	// the AUCs may differ by a couple of the 1/(positives·negatives)
	// steps a swapped pair makes, not by the 1e-3 between λ settings.
	pos := 0
	for _, y := range val.Labels {
		pos += int(y)
	}
	pairTol := 2 / float64(pos*(len(val.Labels)-pos))
	for _, l := range lambdas[:r.LambdasFitted] {
		one, err := Fit(train, val, nil, Options{Lambdas: []float64{l}})
		if err != nil {
			t.Fatal(err)
		}
		if one.ValAUC > r.ValAUC+pairTol {
			t.Errorf("λ %g alone: validation AUC %v beats the kept λ %g's %v", l, one.ValAUC, r.Lambda, r.ValAUC)
		}
	}
}

// TestFitContextCancelled: a fit whose context is done stops with the
// context's error.
func TestFitContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d := table(300, 2, 3, 2, 5)
	if _, err := FitContext(ctx, d, d, nil, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestFitErrors(t *testing.T) {
	one := table(50, 0, 0, 2, 3)
	for i := range one.Labels {
		one.Labels[i] = 0
	}
	other := table(20, 1, 3, 0, 3)
	for _, tc := range []struct {
		name        string
		train, test *data.Dataset
	}{
		{"one class", one, nil},
		{"other columns", table(50, 0, 0, 2, 4), other},
		{"no labels", &data.Dataset{IDs: []uint64{1}, X: &data.Features{Rows: 1}}, nil},
	} {
		if _, err := Fit(tc.train, nil, tc.test, Options{}); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestCap(t *testing.T) {
	d := table(500, 1, 3, 2, 5)
	r, err := Fit(d, nil, d, Options{MaxRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.TrainRows != 100 || !r.Capped || math.Abs(r.Lambda-0.01) > 1e-12 {
		t.Errorf("rows %d capped %v λ %v, want 100 true 0.01", r.TrainRows, r.Capped, r.Lambda)
	}
}

// TestObjectiveParallelMatchesOneRange checks that the two-range parallel
// sum of the loss and gradient equals one serial pass over the rows (to
// rounding) and gives bit-identical results call after call.
func TestObjectiveParallelMatchesOneRange(t *testing.T) {
	d := table(5000, 3, 7, 4, 5)
	des := newDesign(d.X, d.Labels, len(d.IDs))
	theta := make([]float64, des.p+1)
	for k := range theta {
		theta[k] = 0.01 * float64(k%13-6)
	}
	const lambda = 0.003
	grad := make([]float64, len(theta))
	f := des.objective(theta, grad, lambda)
	// One serial pass, scaled as the objective defines.
	g1 := make([]float64, len(theta))
	f1 := des.lossRows(theta[:des.p], theta[des.p], g1, 0, des.n) / float64(des.n)
	for k, v := range theta[:des.p] {
		f1 += 0.5 * lambda * v * v
		g1[k] = g1[k]/float64(des.n) + lambda*v
	}
	g1[des.p] /= float64(des.n)
	if math.Abs(f-f1) > 1e-12 {
		t.Errorf("loss %v, one range %v", f, f1)
	}
	for k := range grad {
		if math.Abs(grad[k]-g1[k]) > 1e-12 {
			t.Fatalf("gradient %d: %v, one range %v", k, grad[k], g1[k])
		}
	}
	again := make([]float64, len(theta))
	if f2 := des.objective(theta, again, lambda); f2 != f || !slices.Equal(again, grad) {
		t.Error("a second evaluation differs from the first")
	}
	des.serial = true
	if f3 := des.objective(theta, again, lambda); f3 != f || !slices.Equal(again, grad) {
		t.Error("the serial evaluation differs from the parallel one")
	}
}

// centralDifference is the central finite difference of the objective
// along θ[k] with step 1e-5.
func centralDifference(des *design, theta []float64, k int, lambda float64) float64 {
	const h = 1e-5
	tp := append([]float64(nil), theta...)
	tm := append([]float64(nil), theta...)
	tp[k] += h
	tm[k] -= h
	return (des.objective(tp, nil, lambda) - des.objective(tm, nil, lambda)) / (2 * h)
}

// TestHessianDiagonalFiniteDifferences: the diagonal the fit rescales by
// is the second derivative of the objective along each weight (and the
// bias), by central differences of the loss, away from the optimum.
func TestHessianDiagonalFiniteDifferences(t *testing.T) {
	d := table(300, 3, 4, 2, 6)
	des := newDesign(d.X, d.Labels, len(d.IDs))
	theta := make([]float64, des.p+1)
	for k := range theta {
		theta[k] = 0.2 * float64(k%5-2)
	}
	const lambda = 0.03
	h := des.hessianDiagonal(theta, lambda)
	const eps = 1e-4
	for k := range theta {
		x := append([]float64(nil), theta...)
		f0 := des.objective(x, nil, lambda)
		x[k] = theta[k] + eps
		fp := des.objective(x, nil, lambda)
		x[k] = theta[k] - eps
		fm := des.objective(x, nil, lambda)
		fd := (fp - 2*f0 + fm) / (eps * eps)
		if math.Abs(fd-h[k]) > 1e-5*max(1, h[k]) {
			t.Errorf("θ[%d]: diagonal %.8g, second difference %.8g", k, h[k], fd)
		}
	}
}
