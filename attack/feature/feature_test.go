package feature

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// lstsqQR solves min ‖[xc; √(nλ)·I]·w − [yc; 0]‖ by gonum's QR (Dense.Solve
// of an overdetermined system), with xc, yc centred, and returns w (p×m)
// and the intercept ȳ − wᵀx̄: the ridge fit by another method than
// FitRidge's Cholesky of the normal equations.
func lstsqQR(t *testing.T, x, y []float64, n, p, m int, lambda float64) (w, b []float64) {
	t.Helper()
	xm, ym := make([]float64, p), make([]float64, m)
	for r := 0; r < n; r++ {
		for j := 0; j < p; j++ {
			xm[j] += x[r*p+j] / float64(n)
		}
		for j := 0; j < m; j++ {
			ym[j] += y[r*m+j] / float64(n)
		}
	}
	rows := n + p
	a := mat.NewDense(rows, p, nil)
	rhs := mat.NewDense(rows, m, nil)
	for r := 0; r < n; r++ {
		for j := 0; j < p; j++ {
			a.Set(r, j, x[r*p+j]-xm[j])
		}
		for j := 0; j < m; j++ {
			rhs.Set(r, j, y[r*m+j]-ym[j])
		}
	}
	for j := 0; j < p; j++ {
		a.Set(n+j, j, math.Sqrt(float64(n)*lambda))
	}
	var sol mat.Dense
	if err := sol.Solve(a, rhs); err != nil {
		t.Fatal(err)
	}
	w = make([]float64, p*m)
	b = append([]float64(nil), ym...)
	for i := 0; i < p; i++ {
		for j := 0; j < m; j++ {
			w[i*m+j] = sol.At(i, j)
			b[j] -= w[i*m+j] * xm[i]
		}
	}
	return w, b
}

func TestFitRidgeMatchesQR(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, p, m int
		lambda  float64
	}{
		{"ols square-ish", 12, 5, 2, 0},
		{"ols tall", 200, 16, 4, 0},
		{"ridge", 60, 10, 3, 0.05},
		{"ridge wide", 20, 30, 2, 0.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.p)))
			x, y := make([]float64, tc.n*tc.p), make([]float64, tc.n*tc.m)
			for i := range x {
				x[i] = rng.NormFloat64() + 0.5
			}
			for i := range y {
				y[i] = rng.NormFloat64()*3 - 1
			}
			w, b, err := FitRidge(x, y, tc.n, tc.p, tc.m, tc.lambda)
			if err != nil {
				t.Fatal(err)
			}
			wq, bq := lstsqQR(t, x, y, tc.n, tc.p, tc.m, tc.lambda)
			for i := range w {
				if math.Abs(w[i]-wq[i]) > 1e-8*(1+math.Abs(wq[i])) {
					t.Fatalf("w[%d] = %g, QR gives %g", i, w[i], wq[i])
				}
			}
			for j := range b {
				if math.Abs(b[j]-bq[j]) > 1e-8*(1+math.Abs(bq[j])) {
					t.Fatalf("b[%d] = %g, QR gives %g", j, b[j], bq[j])
				}
			}
		})
	}
}

func TestFitRidgeHandCase(t *testing.T) {
	// y = 2x + 1 exactly: least squares recovers w = 2, b = 1.
	x := []float64{0, 1, 2, 3}
	y := []float64{1, 3, 5, 7}
	w, b, err := FitRidge(x, y, 4, 1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w[0]-2) > 1e-12 || math.Abs(b[0]-1) > 1e-12 {
		t.Fatalf("w, b = %g, %g, want 2, 1", w[0], b[0])
	}
	// Ridge by hand: Σxc² = 5, Σxc·yc = 10, n = 4, λ = 0.25: w = 10/(5+1) = 5/3, b = 4 − w·1.5.
	w, b, err = FitRidge(x, y, 4, 1, 1, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w[0]-5.0/3) > 1e-12 || math.Abs(b[0]-(4-2.5)) > 1e-12 {
		t.Fatalf("ridge w, b = %g, %g, want 5/3, 1.5", w[0], b[0])
	}
	if _, _, err := FitRidge([]float64{1, 1, 1}, []float64{1, 2, 3}, 3, 1, 1, 0); err == nil {
		t.Fatal("a constant input with λ = 0 is singular, want an error")
	}
	if _, _, err := FitRidge(x, y, 4, 1, 1, -1); err == nil {
		t.Fatal("λ < 0: want an error")
	}
}

func TestR2HandCases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		y, yhat []float32
		want    float64
		ok      bool
	}{
		// SSE 1, mean 2.5, SST 1.5²+.5²+.5²+1.5² = 5.
		{"one off", []float32{1, 2, 3, 4}, []float32{1, 2, 3, 5}, 0.8, true},
		{"exact", []float32{1, 2, 3, 4}, []float32{1, 2, 3, 4}, 1, true},
		{"the mean", []float32{1, 2, 3, 4}, []float32{2.5, 2.5, 2.5, 2.5}, 0, true},
		// SSE 4·1² = 4 against SST 5.
		{"worse than nothing", []float32{1, 2, 3, 4}, []float32{2, 3, 4, 5}, 1 - 4.0/5, true},
		{"reversed", []float32{1, 2, 3, 4}, []float32{4, 3, 2, 1}, 1 - 20.0/5, true},
		{"constant", []float32{3, 3, 3}, []float32{1, 2, 3}, 0, false},
	} {
		got, ok := R2(tc.y, tc.yhat, 1, 0)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: R2 = %g, %t; want %g, %t", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	// A second column of a row-major pair.
	got, _ := R2([]float32{9, 1, 9, 2, 9, 3, 9, 4}, []float32{0, 1, 0, 2, 0, 3, 0, 5}, 2, 1)
	if math.Abs(got-0.8) > 1e-6 {
		t.Errorf("column 1 of 2: R2 = %g, want 0.8", got)
	}
}

func TestAccuracyHandCase(t *testing.T) {
	truth := []int32{1, 1, 1, 2, 3}
	guess := []int32{1, 2, 1, 2, 1}
	acc, maj := Accuracy(truth, guess, 1, 0)
	if acc != 3.0/5 || maj != 3.0/5 {
		t.Fatalf("accuracy %g, majority %g; want 0.6, 0.6", acc, maj)
	}
}

// linearBottom returns features of rows rows with dense columns drawn
// uniformly and two categorical columns, and their embeddings e = x·A
// through a random linear map A of the dense columns to d > dense
// dimensions plus indicator weights of the categorical values.
func linearBottom(rows, dense, d int, seed uint64) (*data.Features, *tensor.Matrix) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := &data.Features{Rows: rows, NumDense: dense, NumCat: 2, Cardinality: []int{3, 4},
		CatNames: []string{"C1", "C2"}, Dense: make([]float32, rows*dense), Cat: make([]int32, rows*2)}
	for j := 0; j < dense; j++ {
		x.DenseNames = append(x.DenseNames, "I"+string(rune('1'+j)))
	}
	for i := range x.Dense {
		x.Dense[i] = rng.Float32()
	}
	for r := 0; r < rows; r++ {
		x.Cat[2*r] = int32(rng.IntN(3))
		x.Cat[2*r+1] = int32(rng.IntN(4))
	}
	a := make([]float32, dense*d)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	catW := make([]float32, 7*d)
	for i := range catW {
		catW[i] = float32(rng.NormFloat64())
	}
	e := tensor.New(rows, d)
	for r := 0; r < rows; r++ {
		for c := 0; c < d; c++ {
			var s float32
			for j := 0; j < dense; j++ {
				s += x.Dense[r*dense+j] * a[j*d+c]
			}
			s += catW[int(x.Cat[2*r])*d+c] + catW[(3+int(x.Cat[2*r+1]))*d+c]
			e.Data[r*d+c] = s
		}
	}
	return x, e
}

func TestLinearInverseOfLinearBottom(t *testing.T) {
	// The embedding is an injective linear function of the features, so
	// the least-squares inverse fitted on 200 rows reconstructs every
	// dense column of 100 other rows exactly (R² = 1) and every
	// categorical value; and the guesses are the QR least-squares
	// solution's predictions.
	const aux, eval, dense, d = 200, 100, 3, 12
	x, e := linearBottom(aux+eval, dense, d, 1)
	auxX, evalX := rowsOf(x, 0, aux), rowsOf(x, aux, aux+eval)
	in := &Input{AuxEmbed: sliceRows(e, 0, aux), EvalEmbed: sliceRows(e, aux, aux+eval), AuxTruth: auxX}
	att := &Linear{Ridge: 0}
	res, err := Run(att, in, evalX)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Columns {
		if c.Score < 1-1e-4 {
			t.Errorf("column %s: score %g, want 1", c.Name, c.Score)
		}
	}
	g, err := att.Reconstruct(in)
	if err != nil {
		t.Fatal(err)
	}
	xa, xe := toFloat64(in.AuxEmbed), toFloat64(in.EvalEmbed)
	ya := make([]float64, aux*dense)
	for i := range ya {
		ya[i] = float64(auxX.Dense[i])
	}
	w, b := lstsqQR(t, xa, ya, aux, d, dense, 0)
	want := Predict(xe, w, b, eval, d, dense)
	for i, v := range g.Dense {
		if math.Abs(float64(v)-want[i]) > 1e-4 {
			t.Fatalf("guess %d = %g, the QR least-squares prediction %g", i, v, want[i])
		}
	}
}

func TestRunOwnBaseline(t *testing.T) {
	// The active holds a copy of the passive's first dense column: the
	// own-column decoder reconstructs it (R² 1) and nothing of the
	// second, independent one (R² ≈ 0); the prior of a categorical
	// column is its majority share.
	const aux, eval = 300, 200
	x, e := linearBottom(aux+eval, 2, 8, 3)
	own := &data.Features{Rows: x.Rows, NumDense: 1, DenseNames: []string{"copy"}, Dense: make([]float32, x.Rows)}
	for r := 0; r < x.Rows; r++ {
		own.Dense[r] = x.Dense[r*2]
	}
	in := &Input{AuxEmbed: sliceRows(e, 0, aux), EvalEmbed: sliceRows(e, aux, aux+eval),
		AuxOwn: rowsOf(own, 0, aux), EvalOwn: rowsOf(own, aux, aux+eval), AuxTruth: rowsOf(x, 0, aux)}
	res, err := Run(&Linear{Ridge: 1e-6}, in, rowsOf(x, aux, aux+eval))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Flatten(nil)
	if v := got["inverse_linear/r2_own/I1"]; v < 0.999 {
		t.Errorf("own R² of the copied column %g, want 1", v)
	}
	if v := got["inverse_linear/r2_own/I2"]; math.Abs(v) > 0.05 {
		t.Errorf("own R² of an independent column %g, want ≈ 0", v)
	}
	// The embedding alone (a linear injective bottom) reconstructs both.
	for _, k := range []string{"inverse_linear/r2_emb/I1", "inverse_linear/r2_emb/I2", "inverse_linear/r2_emb_mean"} {
		if v, ok := got[k]; !ok || v < 0.999 {
			t.Errorf("%s = %g (%t), want 1", k, v, ok)
		}
	}
	_, maj := Accuracy(rowsOf(x, aux, aux+eval).Cat, rowsOf(x, aux, aux+eval).Cat, 2, 1)
	if v := got["inverse_linear/acc_prior/C2"]; v != maj {
		t.Errorf("prior of C2 %g, want its majority share %g", v, maj)
	}
	for _, k := range []string{"inverse_linear/r2_mean", "inverse_linear/acc_mean", "inverse_linear/acc_prior_mean"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %s in %v", k, got)
		}
	}
}

func TestRegistry(t *testing.T) {
	if _, err := New("inverse_linear"); err != nil {
		t.Fatal(err)
	}
	if _, err := New("nope"); err == nil {
		t.Fatal("unknown attack: want an error")
	}
	if err := Check([]string{"inverse_linear", "nope"}); err == nil {
		t.Fatal("Check of an unknown name: want an error")
	}
}

func rowsOf(x *data.Features, from, to int) *data.Features {
	rows := make([]int, to-from)
	for i := range rows {
		rows[i] = from + i
	}
	return data.SelectRows(&data.Dataset{IDs: make([]uint64, x.Rows), X: x}, rows).X
}

func sliceRows(e *tensor.Matrix, from, to int) *tensor.Matrix {
	out := tensor.New(to-from, e.Cols)
	copy(out.Data, e.Data[from*e.Cols:to*e.Cols])
	return out
}

func TestLOOErrorsMatchRefits(t *testing.T) {
	// The closed-form leave-one-out errors against n refits by FitRidge,
	// each on n−1 rows, predicting the row left out.
	const n, p, m = 30, 6, 2
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := make([]float64, n*p), make([]float64, n*m)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for r := 0; r < n; r++ {
		for j := 0; j < m; j++ {
			y[r*m+j] = x[r*p+j]*2 - x[r*p+3] + rng.NormFloat64()
		}
	}
	grid := []float64{0, 1e-3, 0.1, 1, 10}
	got, err := LOOErrors(x, y, n, p, m, grid)
	if err != nil {
		t.Fatal(err)
	}
	ym := make([]float64, m)
	for r := 0; r < n; r++ {
		for j := 0; j < m; j++ {
			ym[j] += y[r*m+j] / n
		}
	}
	for gi, lambda := range grid {
		var want float64
		sse, sst := make([]float64, m), make([]float64, m)
		for i := 0; i < n; i++ {
			var xs, ys []float64
			for r := 0; r < n; r++ {
				if r != i {
					xs = append(xs, x[r*p:(r+1)*p]...)
					ys = append(ys, y[r*m:(r+1)*m]...)
				}
			}
			// FitRidge's λ is per row: n−1 rows need λ·n/(n−1) for the
			// same penalty nλ as the closed form's.
			w, b, err := FitRidge(xs, ys, n-1, p, m, lambda*n/(n-1))
			if err != nil {
				t.Fatal(err)
			}
			pred := Predict(x[i*p:(i+1)*p], w, b, 1, p, m)
			for j := 0; j < m; j++ {
				e := y[i*m+j] - pred[j]
				sse[j] += e * e
				sst[j] += (y[i*m+j] - ym[j]) * (y[i*m+j] - ym[j])
			}
		}
		for j := range sse {
			want += sse[j] / sst[j]
		}
		if math.Abs(got[gi]-want) > 1e-8*want {
			t.Errorf("λ %g: closed-form LOO error %g, refits give %g", lambda, got[gi], want)
		}
	}
	lambda, err := ChooseRidge(x, y, n, p, m, grid)
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for i := range got {
		if got[i] < got[best] {
			best = i
		}
	}
	if lambda != grid[best] {
		t.Errorf("ChooseRidge gave %g, the smallest LOO error is at %g", lambda, grid[best])
	}
}

func TestMLPInvertsANonlinearBottom(t *testing.T) {
	// e = x³ for x ~ U(0, 1): the best linear decoder reaches R² =
	// corr(x, x³)² = 0.075²/((1/12)(1/7 − 1/16)) ≈ 0.84; the MLP decoder
	// inverts the cube.
	in, truth := cubeBottom(4)
	score := func(a Attack) float64 {
		res, err := Run(a, in, truth)
		if err != nil {
			t.Fatal(err)
		}
		return res.Columns[0].Score
	}
	lin := score(&Linear{Ridge: 0})
	if math.Abs(lin-0.84) > 0.03 {
		t.Errorf("linear decoder R² %g, want ≈ 0.84", lin)
	}
	mlp, err := New("inverse_mlp")
	if err != nil {
		t.Fatal(err)
	}
	if got := score(mlp); got < 0.97 {
		t.Errorf("MLP decoder R² %g, want ≥ 0.97 (linear: %g)", got, lin)
	}
}

func TestAuxRows(t *testing.T) {
	a, err := AuxRows(100, 30, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := AuxRows(100, 30, 7)
	c, _ := AuxRows(100, 30, 8)
	seen := map[int]bool{}
	for i, r := range a {
		if r < 0 || r >= 100 || seen[r] || i > 0 && r <= a[i-1] {
			t.Fatalf("rows %v: not distinct ascending rows of 100", a)
		}
		seen[r] = true
	}
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("a seed's draw is not repeatable, or two seeds draw the same rows")
	}
	if all, _ := AuxRows(5, 5, 1); !slices.Equal(all, []int{0, 1, 2, 3, 4}) {
		t.Errorf("all 5 of 5 rows: %v", all)
	}
	for _, n := range []int{6, 0} {
		if _, err := AuxRows(5, n, 1); err == nil {
			t.Errorf("%d auxiliary rows of 5: accepted", n)
		}
	}
}

// identity embeds a table of dense columns as themselves.
type identity struct{ d int }

func (e identity) CutDim() int { return e.d }
func (e identity) Forward(in *data.Batch) (*tensor.Matrix, error) {
	return in.Dense.Clone(), nil
}

func TestEvaluatorSamplesALargeTestSplit(t *testing.T) {
	// An identity bottom: every column is reconstructed exactly (R² 1)
	// whichever test rows are drawn; a test split above MaxEvalRows is
	// evaluated on MaxEvalRows of its rows.
	const train, test = 300, MaxEvalRows + 500
	x, _ := linearBottom(train+test, 2, 4, 11)
	x.NumCat, x.Cat, x.Cardinality, x.CatNames = 0, nil, nil, nil
	ev, err := NewEvaluator([]string{"inverse_linear"}, rowsOf(x, 0, train), rowsOf(x, train, train+test), nil, nil, 100, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev.truth.Rows != MaxEvalRows || len(ev.all) != MaxEvalRows {
		t.Fatalf("%d evaluated rows, want %d", ev.truth.Rows, MaxEvalRows)
	}
	figs, err := ev.Run(identity{2})
	if err != nil {
		t.Fatal(err)
	}
	if v := figs["inverse_linear/r2_mean"]; math.Abs(v-1) > 1e-4 {
		t.Errorf("mean R² %g of an identity bottom, want 1", v)
	}
}

// cubeBottom is a one-column passive x ~ U(0, 1) embedded as e = x³, its
// first 1,000 rows auxiliary and 500 more evaluated.
func cubeBottom(seed uint64) (*Input, *data.Features) {
	const aux, eval = 1000, 500
	rng := rand.New(rand.NewPCG(seed, seed))
	x := &data.Features{Rows: aux + eval, NumDense: 1, DenseNames: []string{"x"}, Dense: make([]float32, aux+eval)}
	e := tensor.New(aux+eval, 1)
	for i := range x.Dense {
		v := rng.Float32()
		x.Dense[i], e.Data[i] = v, v*v*v
	}
	return &Input{AuxEmbed: sliceRows(e, 0, aux), EvalEmbed: sliceRows(e, aux, aux+eval), AuxTruth: rowsOf(x, 0, aux), Seed: 1}, rowsOf(x, aux, aux+eval)
}
