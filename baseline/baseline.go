// Package baseline fits the sanity baseline of a tabular run: an
// L2-regularised logistic regression on all the columns one party (or, in
// the in-process simulation, a pooled data owner) holds, with the encoding
// the split model reads — each categorical column one-hot over its ids
// (vocabulary ids or hash buckets), each numeric column standardised by
// the training rows' mean and standard deviation.
//
// It minimises the mean logistic loss plus (λ/2)·‖w‖² (the bias is not
// penalised) by full-batch L-BFGS (gonum's, written out in lbfgs.go, on weights rescaled by
// the square root of the Hessian's diagonal; the loss is summed over two
// fixed row ranges in parallel and added in order, so the result is
// deterministic), for each λ of a small grid warm-started from the
// strongest penalty down (to a loose tolerance); with a validation set
// the λ of the best validation AUC is kept and refitted to the tight
// tolerance, else λ = 1/n is fitted to it. The path stops at the first λ
// whose validation AUC falls below the best so far: the weaker penalties
// after it take the most iterations and, on a path whose AUC rises to one
// peak and falls, cannot win. Only the ids that occur in the fitted rows
// are optimised (the others' weights are exactly 0 at the optimum, and
// are reported so). The fit reads at most MaxRows
// training rows (the first ones in the canonical order) and stops after
// MaxIter iterations per λ; Result says when either cap bit.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/metrics"
)

// Defaults of [Options].
const (
	DefaultMaxRows = 50_000
	DefaultMaxIter = 300
)

// gradTol is the gradient norm below which the kept λ's fit has
// converged; pathGradTol is the looser one of the fits along the path that
// choose λ.
const (
	gradTol     = 1e-7
	pathGradTol = 1e-5
)

// DefaultLambdas is the λ grid tried when a validation set is given,
// strongest first.
var DefaultLambdas = []float64{1e-1, 1e-2, 1e-3, 1e-4, 1e-5}

// Options bound the fit.
type Options struct {
	// Lambdas is the grid of L2 strengths (nil: DefaultLambdas); without
	// a validation set only 1/n is fitted.
	Lambdas []float64
	// MaxRows caps the training rows read (0: DefaultMaxRows).
	MaxRows int
	// MaxIter caps the L-BFGS iterations per λ (0: DefaultMaxIter).
	MaxIter int
	// Serial sums the row ranges one after the other on the calling
	// goroutine instead of in parallel: the same numbers on one core,
	// for a fit running beside other work.
	Serial bool
}

// Result is the fitted baseline and its AUCs.
type Result struct {
	// Lambda is the L2 strength kept.
	Lambda float64
	// W are the weights (one-hot ids first, column by column, then the
	// standardised numeric columns) and B the bias.
	W []float64
	B float64
	// Mean and Scale are the standardisation the numeric weights of W
	// apply to: column k enters as (x − Mean[k])·Scale[k] (Scale 0 for a
	// column constant in the fitted rows).
	Mean, Scale []float64
	// ValAUC and TestAUC are NaN where the split is empty or has one
	// class.
	ValAUC, TestAUC float64
	// TrainRows is the number of training rows fitted on; Capped says
	// MaxRows cut the training split.
	TrainRows int
	Capped    bool
	// Features is the number of weights.
	Features int
	// Iterations is the L-BFGS iterations of the kept λ; Converged says
	// it stopped on the gradient or function criterion, not on MaxIter.
	Iterations int
	Converged  bool
	// TestScores are the kept model's scores of the test rows, in order
	// (nil without test rows), for a paired comparison with another model.
	TestScores []float64
	// LambdasFitted is how many λ of the grid were fitted before the
	// path stopped.
	LambdasFitted int
}

// design is the encoded training table in a compact weight layout: only
// the one-hot ids that occur in the fitted rows get a weight (an id that
// never occurs has gradient λ·w from w = 0, so its optimal weight is
// exactly 0 and carrying it would only lengthen every vector the
// optimiser touches), followed by the standardised numeric columns.
type design struct {
	n, numCat, numDense int
	off                 []int     // full-layout one-hot offset of each categorical column
	fullP               int       // weights in the full layout (every id of every column)
	slot                []int32   // full one-hot index → compact weight index, -1 for an id not in the fitted rows
	cat                 []int32   // n×numCat compact weight indices
	dense               []float64 // n×numDense, standardised
	mean, scale         []float64 // per numeric column; scale 0 for a constant column
	p                   int       // number of compact weights
	y                   []float64

	solver   *lbfgs      // the L-BFGS state, kept from one λ to the next
	partGrad [][]float64 // objective's per-range gradients (range 0 uses the caller's)
	partF    []float64
	serial   bool // sum the ranges on the calling goroutine
}

func newDesign(x *data.Features, labels []uint8, n int) *design {
	d := &design{n: n, numCat: x.NumCat, numDense: x.NumDense, off: make([]int, x.NumCat)}
	oneHot := 0
	for j, c := range x.Cardinality {
		d.off[j] = oneHot
		oneHot += c
	}
	d.fullP = oneHot + x.NumDense
	// Compact indices in full-layout order, so the weights keep the
	// order of their columns and ids.
	d.slot = make([]int32, oneHot)
	for i := range n {
		for j := range d.numCat {
			d.slot[d.off[j]+int(x.Cat[i*x.NumCat+j])] = 1
		}
	}
	for k, seen := range d.slot {
		if seen == 0 {
			d.slot[k] = -1
			continue
		}
		d.slot[k] = int32(d.p)
		d.p++
	}
	d.cat = make([]int32, n*d.numCat)
	for i := range n {
		for j := range d.numCat {
			d.cat[i*d.numCat+j] = d.slot[d.off[j]+int(x.Cat[i*x.NumCat+j])]
		}
	}
	d.p += x.NumDense
	d.mean = make([]float64, x.NumDense)
	d.scale = make([]float64, x.NumDense)
	for k := range x.NumDense {
		var s, s2 float64
		for i := range n {
			v := float64(x.Dense[i*x.NumDense+k])
			s += v
			s2 += v * v
		}
		m := s / float64(n)
		sd := math.Sqrt(max(0, s2/float64(n)-m*m))
		d.mean[k] = m
		if sd > 1e-12 {
			d.scale[k] = 1 / sd
		}
	}
	d.dense = d.standardise(x, n, nil)
	d.y = make([]float64, n)
	for i := range n {
		d.y[i] = float64(labels[i])
	}
	return d
}

// pack returns θ = (w, b) in the compact layout from full-layout weights
// w (the weights of ids not in the fitted rows are dropped).
func (d *design) pack(w []float64, b float64) []float64 {
	theta := make([]float64, d.p+1)
	for k, s := range d.slot {
		if s >= 0 {
			theta[s] = w[k]
		}
	}
	copy(theta[d.p-d.numDense:d.p], w[len(d.slot):])
	theta[d.p] = b
	return theta
}

// unpack writes the compact weights of θ into dst in the full layout
// (zero for an id not in the fitted rows) and returns it.
func (d *design) unpack(theta, dst []float64) []float64 {
	dst = append(dst[:0], make([]float64, d.fullP)...)
	for k, s := range d.slot {
		if s >= 0 {
			dst[k] = theta[s]
		}
	}
	copy(dst[len(d.slot):], theta[d.p-d.numDense:d.p])
	return dst
}

// standardise returns the first n rows of x's numeric columns,
// standardised with the training statistics.
func (d *design) standardise(x *data.Features, n int, dst []float64) []float64 {
	dst = append(dst[:0], make([]float64, n*d.numDense)...)
	for i := range n {
		for k := range d.numDense {
			dst[i*d.numDense+k] = (float64(x.Dense[i*d.numDense+k]) - d.mean[k]) * d.scale[k]
		}
	}
	return dst
}

// logit is w·x_i + b for row i of a table with compact weight indices
// cat (negative: an id without a weight) and standardised numeric values
// dense. The terms go to four partial sums by their position (column j
// to sum j mod 4, the numeric columns after the categorical ones), added
// as b + ((s0+s1) + (s2+s3)): an order fixed by the columns alone, whose
// four independent chains of additions run in parallel where one chain
// of 39 waited on each addition in turn.
func (d *design) logit(w []float64, b float64, cat []int32, dense []float64, i int) float64 {
	// The partial sums live in four variables, not an array indexed by
	// the column: the compiler then keeps them in registers. Sum j takes
	// the terms at positions ≡ j (mod 4), in column order.
	var a0, a1, a2, a3 float64
	cs := cat[i*d.numCat : (i+1)*d.numCat]
	j := 0
	for ; j+4 <= len(cs); j += 4 {
		c := cs[j : j+4 : j+4]
		if c[0] >= 0 {
			a0 += w[c[0]]
		}
		if c[1] >= 0 {
			a1 += w[c[1]]
		}
		if c[2] >= 0 {
			a2 += w[c[2]]
		}
		if c[3] >= 0 {
			a3 += w[c[3]]
		}
	}
	for ; j < len(cs); j++ {
		if s := cs[j]; s >= 0 {
			a0, a1, a2, a3 = addLane(a0, a1, a2, a3, j&3, w[s])
		}
	}
	base := d.p - d.numDense
	row := dense[i*d.numDense : (i+1)*d.numDense]
	ws := w[base : base+len(row)]
	k := 0
	// Position numCat+k goes to sum (numCat+k) mod 4: the first terms
	// until that is 0 one at a time, then four at a time.
	for ; k < len(row) && (d.numCat+k)&3 != 0; k++ {
		a0, a1, a2, a3 = addLane(a0, a1, a2, a3, (d.numCat+k)&3, ws[k]*row[k])
	}
	for ; k+4 <= len(row); k += 4 {
		r, v := row[k:k+4:k+4], ws[k:k+4:k+4]
		a0 += v[0] * r[0]
		a1 += v[1] * r[1]
		a2 += v[2] * r[2]
		a3 += v[3] * r[3]
	}
	for ; k < len(row); k++ {
		a0, a1, a2, a3 = addLane(a0, a1, a2, a3, (d.numCat+k)&3, ws[k]*row[k])
	}
	return b + ((a0 + a1) + (a2 + a3))
}

// addLane returns the four partial sums with t added to sum lane.
func addLane(a0, a1, a2, a3 float64, lane int, t float64) (float64, float64, float64, float64) {
	switch lane {
	case 0:
		a0 += t
	case 1:
		a1 += t
	case 2:
		a2 += t
	default:
		a3 += t
	}
	return a0, a1, a2, a3
}

// objective returns f(θ) and writes ∇f into grad (when non-nil), θ = (w, b):
// f = mean softplus loss + (λ/2)‖w‖².
//
// The rows are cut into objParts fixed ranges summed on their own
// goroutines into their own loss and gradient buffers, which are then
// added in range order: the result depends on the data alone, never on
// timing.
func (d *design) objective(theta, grad []float64, lambda float64) float64 {
	w, b := theta[:d.p], theta[d.p]
	parts := objParts
	if d.n < 2*minPartRows {
		parts = 1
	}
	if len(d.partGrad) < parts {
		d.partGrad = make([][]float64, parts)
		d.partF = make([]float64, parts)
	}
	run := func(k int) {
		lo, hi := d.n*k/parts, d.n*(k+1)/parts
		var g []float64
		if grad != nil {
			if k == 0 {
				g = grad
			} else {
				if len(d.partGrad[k]) != len(grad) {
					d.partGrad[k] = make([]float64, len(grad))
				}
				g = d.partGrad[k]
			}
			clear(g)
		}
		d.partF[k] = d.lossRows(w, b, g, lo, hi)
	}
	if d.serial {
		for k := range parts {
			run(k)
		}
	} else {
		var wg sync.WaitGroup
		for k := 1; k < parts; k++ {
			wg.Go(func() { run(k) })
		}
		run(0)
		wg.Wait()
	}
	f := d.partF[0]
	for k := 1; k < parts; k++ {
		f += d.partF[k]
		if grad != nil {
			for j, v := range d.partGrad[k] {
				grad[j] += v
			}
		}
	}
	inv := 1 / float64(d.n)
	f *= inv
	var ww float64
	for k, v := range w {
		ww += v * v
		if grad != nil {
			grad[k] = grad[k]*inv + lambda*v
		}
	}
	if grad != nil {
		grad[d.p] *= inv
	}
	return f + 0.5*lambda*ww
}

// objParts is how many row ranges objective sums in parallel, and
// minPartRows the fewest rows worth a goroutine of their own.
const (
	objParts    = 2
	minPartRows = 2000
)

// lossRows returns Σ (softplus(z_i) − y_i·z_i) over rows [lo, hi) and,
// when g is non-nil, adds Σ (σ(z_i) − y_i)·x_i into g (unscaled).
//
// Rows go in blocks of lossBlock: the block's logits (gathers) first, then
// its losses and residuals, then its gradient (scatters), so the memory
// accesses of one row wait on neither the exponential of the row before
// nor its scatter. The sums are made in row order, as one row at a time
// would.
func (d *design) lossRows(w []float64, b float64, g []float64, lo, hi int) float64 {
	base := d.p - d.numDense
	var f float64
	var z, r [lossBlock]float64
	for i0 := lo; i0 < hi; i0 += lossBlock {
		m := min(lossBlock, hi-i0)
		for k := range m {
			z[k] = d.logit(w, b, d.cat, d.dense, i0+k)
		}
		for k := range m {
			// log(1+e^z) − y·z, stably; softplus and σ share e^−|z|.
			e := math.Exp(-math.Abs(z[k]))
			y := d.y[i0+k]
			f += softplusExp(z[k], e) - y*z[k]
			r[k] = sigmoidExp(z[k], e) - y
		}
		if g == nil {
			continue
		}
		for k := range m {
			i, rk := i0+k, r[k]
			for _, s := range d.cat[i*d.numCat : (i+1)*d.numCat] {
				g[s] += rk
			}
			for j, x := range d.dense[i*d.numDense : (i+1)*d.numDense] {
				g[base+j] += rk * x
			}
			g[d.p] += rk
		}
	}
	return f
}

// lossBlock is the rows lossRows takes in one block.
const lossBlock = 64

// softplusExp is softplus(z) given e = e^−|z|, with the same operations
// as softplus.
func softplusExp(z, e float64) float64 {
	if z > 0 {
		return z + math.Log1p(e)
	}
	return math.Log1p(e)
}

// sigmoidExp is sigmoid(z) given e = e^−|z|, with the same operations as
// sigmoid.
func sigmoidExp(z, e float64) float64 {
	if z >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// Fit fits the baseline on train (which must have labels and both
// classes) and scores val and test (either may be nil or empty).
func Fit(train, val, test *data.Dataset, o Options) (*Result, error) {
	return FitContext(context.Background(), train, val, test, o)
}

// FitContext is Fit that gives up, returning ctx's error, once ctx is
// done (checked at every L-BFGS iteration), so a fit running beside
// training can be abandoned with it.
func FitContext(ctx context.Context, train, val, test *data.Dataset, o Options) (*Result, error) {
	if train == nil || train.X == nil || len(train.Labels) != len(train.IDs) {
		return nil, errors.New("baseline: the training split has no features or no labels")
	}
	if train.X.Image != nil {
		return nil, errors.New("baseline: the logistic baseline reads tables, not images")
	}
	for _, part := range []struct {
		name string
		d    *data.Dataset
	}{{"validation", val}, {"test", test}} {
		if part.d == nil || len(part.d.IDs) == 0 {
			continue
		}
		if x := part.d.X; x == nil || x.NumCat != train.X.NumCat || x.NumDense != train.X.NumDense || len(part.d.Labels) != len(part.d.IDs) {
			return nil, fmt.Errorf("baseline: the %s split has other columns than the training split, or no labels", part.name)
		}
	}
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxIter <= 0 {
		o.MaxIter = DefaultMaxIter
	}
	n := min(len(train.IDs), o.MaxRows)
	pos := 0
	for _, y := range train.Labels[:n] {
		pos += int(y)
	}
	if pos == 0 || pos == n {
		return nil, fmt.Errorf("baseline: the %d training rows fitted are of one class", n)
	}
	d := newDesign(train.X, train.Labels, n)
	d.serial = o.Serial
	res := &Result{TrainRows: n, Capped: n < len(train.IDs), Features: d.fullP, ValAUC: math.NaN(), TestAUC: math.NaN()}

	hasVal := val != nil && len(val.IDs) > 0
	lambdas := []float64{1 / float64(n)}
	if hasVal {
		lambdas = o.Lambdas
		if lambdas == nil {
			lambdas = DefaultLambdas
		}
	}
	theta := make([]float64, d.p+1)
	// Start from the log-odds of the positive rate: the optimum of the
	// bias alone.
	rate := float64(pos) / float64(n)
	theta[d.p] = math.Log(rate / (1 - rate))
	bestAUC := math.Inf(-1)
	var scratch, best []float64
	// The path is walked with a looser gradient tolerance when there is
	// more than one λ (the AUCs that choose among them settle long
	// before the loss does); the λ kept is then refitted from there to
	// the tight tolerance, so the weights and AUCs reported are those of
	// a converged fit.
	pathTol := gradTol
	if len(lambdas) > 1 {
		pathTol = pathGradTol
	}
	for _, lambda := range lambdas {
		it, conv, err := d.minimise(ctx, theta, lambda, o.MaxIter, pathTol)
		res.LambdasFitted++
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("baseline: λ=%g: %w", lambda, err)
		}
		valAUC := math.NaN()
		if hasVal {
			var ok bool
			scratch = d.scores(theta, val.X, scratch)
			if valAUC, ok = metrics.AUC(scratch, val.Labels, nil); !ok {
				valAUC = math.NaN()
			}
		}

		if best == nil || valAUC > bestAUC {
			bestAUC = valAUC
			res.Lambda, res.Iterations, res.Converged, res.ValAUC = lambda, it, conv, valAUC
			best = append(best[:0], theta...)
		} else if valAUC < bestAUC {
			// Past the peak of the path: the weaker penalties left
			// cost the most iterations and would fit the noise more.
			break
		}
	}
	if pathTol != gradTol {
		it, conv, err := d.minimise(ctx, best, res.Lambda, o.MaxIter, gradTol)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, fmt.Errorf("baseline: λ=%g: %w", res.Lambda, err)
		}
		res.Iterations += it
		res.Converged = conv
		if hasVal {
			scratch = d.scores(best, val.X, scratch)
			if auc, ok := metrics.AUC(scratch, val.Labels, nil); ok {
				res.ValAUC = auc
			}
		}
	}
	res.W, res.B = d.unpack(best, nil), best[d.p]
	res.Mean, res.Scale = d.mean, d.scale
	if test != nil && len(test.IDs) > 0 {
		scratch = d.scores(best, test.X, scratch)
		if auc, ok := metrics.AUC(scratch, test.Labels, nil); ok {
			res.TestAUC = auc
		}
		res.TestScores = slices.Clone(scratch[:len(test.IDs)])
	}
	return res, nil
}

// minimise runs L-BFGS from theta (updated in place) for one λ until the
// gradient's largest entry is below gradTol (or the loss stops changing)
// and returns the iterations made and whether it converged before
// maxIter.
//
// L-BFGS runs on rescaled weights u = √h ⊙ θ, h the diagonal of the
// Hessian at the starting θ (see hessianDiagonal): a one-hot weight's
// curvature grows with its id's count, from λ for an id seen once to
// about a quarter of its share of the rows for a frequent one, and that
// spread, not the loss's shape, is what slows an unscaled L-BFGS. The
// scaling changes the path to the optimum, not the optimum; the stopping
// test reads the gradient in θ, as unscaled.
func (d *design) minimise(ctx context.Context, theta []float64, lambda float64, maxIter int, gradTol float64) (int, bool, error) {
	scale := d.hessianDiagonal(theta, lambda)
	for k, h := range scale {
		scale[k] = 1 / math.Sqrt(h) // θ = scale ⊙ u
	}
	u := make([]float64, len(theta))
	for k, v := range theta {
		u[k] = v / scale[k]
	}
	x := make([]float64, len(theta))
	gradTheta := make([]float64, len(theta))
	eval := func(uu, grad []float64) float64 {
		for k, v := range uu {
			x[k] = scale[k] * v
		}
		f := d.objective(x, gradTheta, lambda)
		for k, g := range gradTheta {
			grad[k] = scale[k] * g
		}
		return f
	}
	conv := scaledConverge{ctx: ctx, scale: scale, tol: gradTol,
		fc: funcConverge{absolute: 1e-10, relative: 1e-10, iterations: 20}}
	if d.solver == nil {
		d.solver = &lbfgs{}
	}
	it, why, err := d.solver.minimise(eval, u, maxIter, conv.converged)
	if ctx.Err() != nil {
		return 0, false, ctx.Err()
	}
	if it == 0 {
		// The start's loss or gradient is not finite.
		return 0, false, err
	}
	if why == functionNegativeInfinity {
		return 0, false, errors.New("the loss is not finite")
	}
	// A line search that can no longer decrease the loss (a failure)
	// leaves the last iterate, which is kept; Converged then says false.
	for k, v := range u {
		theta[k] = scale[k] * v
	}
	return it, why == gradientThreshold || why == functionConvergence, nil
}

// hessianDiagonal returns the diagonal of f's Hessian at θ = (w, b):
// (1/n) Σᵢ σᵢ(1−σᵢ) x_ij² + λ for a weight, without λ for the bias, with
// σᵢ = σ(zᵢ). Entries are at least minCurvature, so a bias whose rows are
// all fitted to certainty still scales by a finite factor.
func (d *design) hessianDiagonal(theta []float64, lambda float64) []float64 {
	w, b := theta[:d.p], theta[d.p]
	base := d.p - d.numDense
	h := make([]float64, d.p+1)
	for i := range d.n {
		z := d.logit(w, b, d.cat, d.dense, i)
		e := math.Exp(-math.Abs(z))
		v := e / ((1 + e) * (1 + e)) // σ(z)(1−σ(z))
		for _, s := range d.cat[i*d.numCat : (i+1)*d.numCat] {
			h[s] += v
		}
		for k, x := range d.dense[i*d.numDense : (i+1)*d.numDense] {
			h[base+k] += v * x * x
		}
		h[d.p] += v
	}
	inv := 1 / float64(d.n)
	for k := range h {
		h[k] *= inv
		if k < d.p {
			h[k] += lambda
		}
		h[k] = max(h[k], minCurvature)
	}
	return h
}

// minCurvature is the least diagonal entry hessianDiagonal returns.
const minCurvature = 1e-12

// scaledConverge ends a rescaled fit (minimise) once the gradient in θ,
// the rescaled gradient divided by scale, has no entry of magnitude
// tol or more; otherwise it is gonum's function-value test, and it ends
// the run as a failure once ctx is done.
type scaledConverge struct {
	ctx   context.Context
	scale []float64
	tol   float64
	fc    funcConverge
}

// converged reports failure once ctx is done, gradientThreshold once the
// gradient in θ is below tol, else what the function-value test says.
func (c *scaledConverge) converged(f float64, grad []float64) stopReason {
	if c.ctx.Err() != nil {
		return failure
	}
	small := true
	for k, g := range grad {
		if math.Abs(g/c.scale[k]) >= c.tol {
			small = false
			break
		}
	}
	if small {
		return gradientThreshold
	}
	return c.fc.converged(f)
}

// funcConverge is gonum's optimize.FunctionConverge: the fit has
// converged once the loss has not fallen by more than relative·|f| +
// absolute below its best for iterations major iterations in a row.
type funcConverge struct {
	absolute, relative float64
	iterations         int

	started bool
	best    float64
	iter    int
}

// converged takes the loss of the next major iterate.
func (fc *funcConverge) converged(f float64) stopReason {
	if !fc.started {
		fc.best, fc.started = f, true
		return notTerminated
	}
	maxAbs := math.Max(math.Abs(f), math.Abs(fc.best))
	if f < fc.best && fc.best-f > fc.relative*maxAbs+fc.absolute {
		fc.best, fc.iter = f, 0
		return notTerminated
	}
	fc.iter++
	if fc.iter < fc.iterations {
		return notTerminated
	}
	return functionConvergence
}

// scores returns the baseline's logits on every row of x (the AUC reads
// them as scores; the sigmoid would not change the order).
func (d *design) scores(theta []float64, x *data.Features, dst []float64) []float64 {
	dense := d.standardise(x, x.Rows, nil)
	cat := make([]int32, len(x.Cat))
	for i, id := range x.Cat {
		cat[i] = d.slot[d.off[i%d.numCat]+int(id)]
	}
	dst = append(dst[:0], make([]float64, x.Rows)...)
	for i := range x.Rows {
		dst[i] = d.logit(theta[:d.p], theta[d.p], cat, dense, i)
	}
	return dst
}
