package feature

import (
	"fmt"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// AutoRidge, as Linear.Ridge, chooses λ among RidgeGrid by leave-one-out
// error on the auxiliary rows ([ChooseRidge]).
const AutoRidge = -1

// RidgeGrid are the ridge λ's (per row: see [FitRidge]) that AutoRidge
// chooses from.
var RidgeGrid = []float64{1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1}

func init() {
	Register("inverse_linear", func() Attack { return &Linear{Ridge: AutoRidge, Clip: true} })
}

// Linear is the learned inverse with a linear decoder: a ridge regression
// of the passive's features (dense columns as they are, categorical
// columns as indicators of their TargetClasses most frequent values) on
// the cut embedding and the active's own columns, fitted in closed form
// on the auxiliary rows. A categorical column is guessed as the class of
// the largest prediction.
type Linear struct {
	// Ridge is λ of [FitRidge]; 0 is ordinary least squares; AutoRidge
	// (the registered default) chooses it by leave-one-out error.
	Ridge float64
	// Clip clips each dense guess to the range of that column among the
	// auxiliary rows (the attacker knows no value outside it), as the
	// registered attack does; without it the guesses are the least-squares
	// predictions.
	Clip bool
	// Chosen is the λ of the last fit.
	Chosen float64
}

// Name returns "inverse_linear".
func (l *Linear) Name() string { return "inverse_linear" }

// Reconstruct fits the decoder on in's auxiliary rows and predicts the
// evaluated rows.
func (l *Linear) Reconstruct(in *Input) (*Guess, error) {
	if in.AuxTruth == nil || in.AuxTruth.Rows == 0 {
		return nil, fmt.Errorf("feature: no auxiliary rows")
	}
	pr, err := newProblem(in)
	if err != nil {
		return nil, err
	}
	xa, xe, y, n, p, m, rows, classes := pr.xa, pr.xe, pr.y, pr.n, pr.p, pr.m, pr.rows, pr.classes
	l.Chosen = l.Ridge
	if l.Ridge == AutoRidge {
		// Chosen on the dense targets (all targets without any).
		sel, ms := y, m
		if d := in.AuxTruth.NumDense; d > 0 && d < m {
			sel, ms = make([]float64, n*d), d
			for r := 0; r < n; r++ {
				copy(sel[r*d:(r+1)*d], y[r*m:r*m+d])
			}
		}
		if l.Chosen, err = ChooseRidge(xa, sel, n, p, ms, RidgeGrid); err != nil {
			return nil, err
		}
	}
	w, b, err := FitRidge(xa, y, n, p, m, l.Chosen)
	if err != nil {
		return nil, err
	}
	g := decode(Predict(xe, w, b, rows, p, m), rows, m, in.AuxTruth.NumDense, classes)
	if l.Clip {
		clipToRange(g.Dense, in.AuxTruth.Dense, in.AuxTruth.NumDense)
	}
	return g, nil
}

// clipToRange clips each column of guess (row-major, stride columns) to
// the range of that column in ref.
func clipToRange(guess, ref []float32, stride int) {
	if stride == 0 || len(ref) == 0 {
		return
	}
	lo, hi := slices.Clone(ref[:stride]), slices.Clone(ref[:stride])
	for i, v := range ref {
		lo[i%stride], hi[i%stride] = min(lo[i%stride], v), max(hi[i%stride], v)
	}
	for i, v := range guess {
		guess[i] = min(max(v, lo[i%stride]), hi[i%stride])
	}
}

// evalRows is the number of evaluated rows of in.
func evalRows(in *Input) int {
	switch {
	case in.EvalEmbed != nil:
		return in.EvalEmbed.Rows
	case in.EvalOwn != nil:
		return in.EvalOwn.Rows
	}
	return 0
}

// FitRidge fits y ≈ x·w + b on n rows (x n×p, y n×m, row-major) by
// minimising (1/n)·‖y − x·w − 1·bᵀ‖² + λ·‖w‖² in closed form: with x and
// y centred on their column means, (xcᵀxc + nλ·I)·w = xcᵀyc by Cholesky,
// and b = ȳ − wᵀx̄ (the intercept is not penalised). It returns w (p×m,
// row-major) and b (m). With p = 0 the fit is the mean of y. With λ = 0
// a rank-deficient x is an error.
func FitRidge(x, y []float64, n, p, m int, lambda float64) (w, b []float64, err error) {
	if n < 1 || len(x) != n*p || len(y) != n*m {
		return nil, nil, fmt.Errorf("feature: ridge on %d rows of %d inputs (%d values) and %d targets (%d values)", n, p, len(x), m, len(y))
	}
	if lambda < 0 {
		return nil, nil, fmt.Errorf("feature: ridge λ %g, want ≥ 0", lambda)
	}
	xm, ym := colMeans(x, n, p), colMeans(y, n, m)
	b = ym
	if p == 0 || m == 0 {
		return make([]float64, p*m), b, nil
	}
	xc, yc := centred(x, xm, n, p), centred(y, ym, n, m)
	var a mat.SymDense
	a.SymOuterK(1, xc.T())
	for i := 0; i < p; i++ {
		a.SetSym(i, i, a.At(i, i)+float64(n)*lambda)
	}
	var ch mat.Cholesky
	if ok := ch.Factorize(&a); !ok {
		return nil, nil, fmt.Errorf("feature: the %d×%d normal equations are singular (inputs linearly dependent on %d rows); a ridge λ > 0 fits them", p, p, n)
	}
	var rhs, sol mat.Dense
	rhs.Mul(xc.T(), yc)
	if err := ch.SolveTo(&sol, &rhs); err != nil {
		return nil, nil, fmt.Errorf("feature: ridge solve: %w", err)
	}
	w = make([]float64, p*m)
	for i := 0; i < p; i++ {
		for j := 0; j < m; j++ {
			w[i*m+j] = sol.At(i, j)
		}
	}
	for j := 0; j < m; j++ {
		for i := 0; i < p; i++ {
			b[j] -= w[i*m+j] * xm[i]
		}
	}
	return w, b, nil
}

// Predict returns x·w + b for rows rows of x (rows×p), w p×m.
func Predict(x, w, b []float64, rows, p, m int) []float64 {
	out := make([]float64, rows*m)
	if rows > 0 && p > 0 && m > 0 {
		o := mat.NewDense(rows, m, out)
		o.Mul(mat.NewDense(rows, p, x), mat.NewDense(p, m, w))
	}
	for r := 0; r < rows; r++ {
		for j, bj := range b {
			out[r*m+j] += bj
		}
	}
	return out
}

// colMeans returns the column means of an n×c row-major matrix.
func colMeans(v []float64, n, c int) []float64 {
	out := make([]float64, c)
	for r := 0; r < n; r++ {
		for j := 0; j < c; j++ {
			out[j] += v[r*c+j]
		}
	}
	for j := range out {
		out[j] /= float64(n)
	}
	return out
}

// centred returns v − 1·meansᵀ as a gonum matrix.
func centred(v, means []float64, n, c int) *mat.Dense {
	out := mat.NewDense(n, c, nil)
	for r := 0; r < n; r++ {
		for j := 0; j < c; j++ {
			out.Set(r, j, v[r*c+j]-means[j])
		}
	}
	return out
}

// ChooseRidge returns the λ of grid whose ridge fit ([FitRidge]) has the
// smallest leave-one-out error on the n rows (the first of ties; see
// [LOOErrors]).
func ChooseRidge(x, y []float64, n, p, m int, grid []float64) (float64, error) {
	errs, err := LOOErrors(x, y, n, p, m, grid)
	if err != nil {
		return 0, err
	}
	best := 0
	for i, e := range errs {
		if e < errs[best] {
			best = i
		}
	}
	return grid[best], nil
}

// LOOErrors returns, for each λ of grid, the leave-one-out error of the
// ridge fit ([FitRidge]) on the n rows: each target's squared LOO
// residuals summed and divided by its sum of squares about the mean
// (targets constant over the rows are left out), summed over targets.
// The LOO residuals come in closed form, e_i/(1 − h_i) with h_i the
// diagonal of the hat matrix 11ᵀ/n + xc(xcᵀxc + nλI)⁻¹xcᵀ, from one
// eigendecomposition of xcᵀxc. With no input or fewer than 2 rows every
// error is 0.
func LOOErrors(x, y []float64, n, p, m int, grid []float64) ([]float64, error) {
	if len(grid) == 0 {
		return nil, fmt.Errorf("feature: no ridge λ to choose from")
	}
	out := make([]float64, len(grid))
	for _, lambda := range grid {
		if lambda < 0 {
			return nil, fmt.Errorf("feature: ridge λ %g, want ≥ 0", lambda)
		}
	}
	if p == 0 || m == 0 || n < 2 {
		return out, nil
	}
	xm, ym := colMeans(x, n, p), colMeans(y, n, m)
	xc, yc := centred(x, xm, n, p), centred(y, ym, n, m)
	var a mat.SymDense
	a.SymOuterK(1, xc.T())
	var eig mat.EigenSym
	if ok := eig.Factorize(&a, true); !ok {
		return nil, fmt.Errorf("feature: the eigendecomposition of the %d×%d input covariance failed", p, p)
	}
	s := eig.Values(nil)
	var v, u, q mat.Dense
	eig.VectorsTo(&v)
	u.Mul(xc, &v)
	q.Mul(u.T(), yc)
	sst := make([]float64, m)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			sst[j] += yc.At(i, j) * yc.At(i, j)
		}
	}
	beta := mat.NewDense(p, m, nil)
	var fit mat.Dense
	for gi, lambda := range grid {
		inv := make([]float64, p)
		for k := range inv {
			if d := s[k] + float64(n)*lambda; d > 1e-12*(1+s[len(s)-1]) {
				inv[k] = 1 / d
			}
		}
		for k := 0; k < p; k++ {
			for j := 0; j < m; j++ {
				beta.Set(k, j, q.At(k, j)*inv[k])
			}
		}
		fit.Mul(&u, beta)
		sse := make([]float64, m)
		for i := 0; i < n; i++ {
			h := 1 / float64(n)
			for k := 0; k < p; k++ {
				h += u.At(i, k) * u.At(i, k) * inv[k]
			}
			den := max(1-h, 1e-9)
			for j := 0; j < m; j++ {
				e := (yc.At(i, j) - fit.At(i, j)) / den
				sse[j] += e * e
			}
		}
		for j := range sse {
			if sst[j] > 1e-12 {
				out[gi] += sse[j] / sst[j]
			}
		}
	}
	return out, nil
}
