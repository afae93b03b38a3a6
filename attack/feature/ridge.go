package feature

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

// DefaultRidge is the linear decoder's ridge λ (per row: see [FitRidge]).
const DefaultRidge = 1e-3

func init() {
	Register("inverse_linear", func() Attack { return &Linear{Ridge: DefaultRidge} })
}

// Linear is the learned inverse with a linear decoder: a ridge regression
// of the passive's features (dense columns as they are, categorical
// columns as indicators of their TargetClasses most frequent values) on
// the cut embedding and the active's own columns, fitted in closed form
// on the auxiliary rows. A categorical column is guessed as the class of
// the largest prediction.
type Linear struct {
	// Ridge is λ of [FitRidge]; 0 is ordinary least squares.
	Ridge float64
}

// Name returns "inverse_linear".
func (l *Linear) Name() string { return "inverse_linear" }

// Reconstruct fits the decoder on in's auxiliary rows and predicts the
// evaluated rows.
func (l *Linear) Reconstruct(in *Input) (*Guess, error) {
	if in.AuxTruth == nil || in.AuxTruth.Rows == 0 {
		return nil, fmt.Errorf("feature: no auxiliary rows")
	}
	n := in.AuxTruth.Rows
	levels := levelsOf(in.AuxOwn, OwnLevels)
	xa, p, err := design(in.AuxEmbed, in.AuxOwn, levels, n)
	if err != nil {
		return nil, fmt.Errorf("auxiliary rows: %w", err)
	}
	rows := evalRows(in)
	xe, _, err := design(in.EvalEmbed, in.EvalOwn, levels, rows)
	if err != nil {
		return nil, fmt.Errorf("evaluated rows: %w", err)
	}
	classes := levelsOf(in.AuxTruth, TargetClasses)
	y, m := targets(in.AuxTruth, classes)
	w, b, err := FitRidge(xa, y, n, p, m, l.Ridge)
	if err != nil {
		return nil, err
	}
	return decode(Predict(xe, w, b, rows, p, m), rows, m, in.AuxTruth.NumDense, classes), nil
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
