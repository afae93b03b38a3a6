package protect

import (
	"fmt"
	"math"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// directLogDCor computes log dCor(e, y) in float64 straight from the
// definition: explicit distance matrices, explicit double centring.
func directLogDCor(e [][]float64, y []float64) float64 {
	n := len(e)
	a := make([][]float64, n)
	b := make([][]float64, n)
	for i := range n {
		a[i], b[i] = make([]float64, n), make([]float64, n)
		for j := range n {
			var s float64
			for k := range e[i] {
				s += (e[i][k] - e[j][k]) * (e[i][k] - e[j][k])
			}
			a[i][j] = math.Sqrt(s)
			b[i][j] = math.Abs(y[i] - y[j])
		}
	}
	center := func(m [][]float64) {
		row := make([]float64, n)
		col := make([]float64, n)
		var all float64
		for i := range n {
			for j := range n {
				row[i] += m[i][j] / float64(n)
				col[j] += m[i][j] / float64(n)
				all += m[i][j] / float64(n*n)
			}
		}
		for i := range n {
			for j := range n {
				m[i][j] += -row[i] - col[j] + all
			}
		}
	}
	center(a)
	center(b)
	var ab, aa, bb float64
	for i := range n {
		for j := range n {
			ab += a[i][j] * b[i][j]
			aa += a[i][j] * a[i][j]
			bb += b[i][j] * b[i][j]
		}
	}
	return math.Log(ab / math.Sqrt(aa*bb))
}

func TestDCorAgainstDirect(t *testing.T) {
	rng := newRNG(1)
	for _, sz := range []struct{ n, d int }{{5, 2}, {12, 3}, {30, 4}} {
		e := tensor.New(sz.n, sz.d)
		e64 := make([][]float64, sz.n)
		y := make([]float32, sz.n)
		y64 := make([]float64, sz.n)
		for i := range sz.n {
			if i%3 == 0 {
				y[i], y64[i] = 1, 1
			}
			e64[i] = make([]float64, sz.d)
			for k := range sz.d {
				x := float32(rng.NormFloat64() + 0.8*float64(y[i]))
				e.Row(i)[k], e64[i][k] = x, float64(x)
			}
		}
		const alpha = 0.7
		dc, _ := NewDCor(alpha)
		grad := tensor.New(sz.n, sz.d)
		for k := range grad.Data {
			grad.Data[k] = 1 // AddLossGrad adds to what is there
		}
		loss, err := dc.AddLossGrad(e, y, grad)
		if err != nil {
			t.Fatal(err)
		}
		want := alpha * directLogDCor(e64, y64)
		if math.Abs(loss-want) > 1e-5*math.Abs(want) {
			t.Errorf("n=%d: loss %v, want %v", sz.n, loss, want)
		}
		// Central finite differences of the float64 definition.
		const h = 1e-5
		var maxErr, maxG float64
		for i := range sz.n {
			for k := range sz.d {
				old := e64[i][k]
				e64[i][k] = old + h
				fp := directLogDCor(e64, y64)
				e64[i][k] = old - h
				fm := directLogDCor(e64, y64)
				e64[i][k] = old
				fd := alpha * (fp - fm) / (2 * h)
				got := float64(grad.Row(i)[k]) - 1
				maxErr = math.Max(maxErr, math.Abs(got-fd))
				maxG = math.Max(maxG, math.Abs(fd))
			}
		}
		if maxErr > 1e-3*maxG {
			t.Errorf("n=%d: gradient error %v (max |grad| %v)", sz.n, maxErr, maxG)
		}
	}
}

// directDCorGrad is ∂ log dCor(e, y)/∂e in float64 straight from the
// definition: explicit double-centred matrices A and B, and the chain rule
// through every a_ij = ‖e_i − e_j‖ (both (i, j) and (j, i)).
func directDCorGrad(e [][]float64, y []float64) [][]float64 {
	n, d := len(e), len(e[0])
	a := make([][]float64, n)
	A := make([][]float64, n)
	B := make([][]float64, n)
	for i := range n {
		a[i], A[i], B[i] = make([]float64, n), make([]float64, n), make([]float64, n)
		for j := range n {
			var s float64
			for k := range d {
				s += (e[i][k] - e[j][k]) * (e[i][k] - e[j][k])
			}
			a[i][j] = math.Sqrt(s)
			A[i][j] = a[i][j]
			B[i][j] = math.Abs(y[i] - y[j])
		}
	}
	for _, m := range [][][]float64{A, B} {
		row := make([]float64, n)
		var all float64
		for i := range n {
			for j := range n {
				row[i] += m[i][j] / float64(n)
				all += m[i][j] / float64(n*n)
			}
		}
		for i := range n {
			for j := range n {
				m[i][j] += -row[i] - row[j] + all
			}
		}
	}
	var ab, aa float64
	for i := range n {
		for j := range n {
			ab += A[i][j] * B[i][j]
			aa += A[i][j] * A[i][j]
		}
	}
	g := make([][]float64, n)
	for i := range n {
		g[i] = make([]float64, d)
		for j := range n {
			if a[i][j] == 0 {
				continue
			}
			// ∂ log dCor/∂a_ij = B_ij/Σ AB − A_ij/Σ AA, and a_ij = a_ji.
			w := 2 * (B[i][j]/ab - A[i][j]/aa) / a[i][j]
			for k := range d {
				g[i][k] += w * (e[i][k] - e[j][k])
			}
		}
	}
	return g
}

// TestDCorRandomBatch checks the blocked, two-worker path (300 rows span two
// row blocks) against the float64 definition: the loss to 1e-5 relative and
// the gradient to 1e-5 of its largest entry, and that a second call gives
// bit-identical results.
func TestDCorRandomBatch(t *testing.T) {
	const n, d, alpha = 300, 16, 0.3
	rng := newRNG(7)
	e := tensor.New(n, d)
	e64 := make([][]float64, n)
	y := make([]float32, n)
	y64 := make([]float64, n)
	for i := range n {
		if rng.Float64() < 0.3 {
			y[i], y64[i] = 1, 1
		}
		e64[i] = make([]float64, d)
		for k := range d {
			x := float32(rng.NormFloat64() + 0.5*float64(y[i])*float64(k%3))
			e.Row(i)[k], e64[i][k] = x, float64(x)
		}
	}
	dc, _ := NewDCor(alpha)
	grad := tensor.New(n, d)
	loss, err := dc.AddLossGrad(e, y, grad)
	if err != nil {
		t.Fatal(err)
	}
	want := alpha * directLogDCor(e64, y64)
	if math.Abs(loss-want) > 1e-5*math.Abs(want) {
		t.Errorf("loss %v, want %v", loss, want)
	}
	g := directDCorGrad(e64, y64)
	var maxErr, maxG float64
	for i := range n {
		for k := range d {
			maxErr = math.Max(maxErr, math.Abs(float64(grad.Row(i)[k])-alpha*g[i][k]))
			maxG = math.Max(maxG, math.Abs(alpha*g[i][k]))
		}
	}
	if maxErr > 1e-5*maxG {
		t.Errorf("gradient error %v (max |grad| %v)", maxErr, maxG)
	}
	t.Logf("loss %v (direct %v), gradient error %.3g of max %.3g", loss, want, maxErr, maxG)
	grad2 := tensor.New(n, d)
	loss2, _ := dc.AddLossGrad(e, y, grad2)
	if loss2 != loss {
		t.Errorf("second call: loss %v, first %v", loss2, loss)
	}
	for k := range grad.Data {
		if grad.Data[k] != grad2.Data[k] {
			t.Fatalf("second call: gradient differs at %d: %v vs %v", k, grad2.Data[k], grad.Data[k])
		}
	}
}

// TestDCorNonBinaryLabels: the closed form needs 0/1 labels; anything
// else (a soft label, NaN) is an error, not a silent wrong answer.
func TestDCorNonBinaryLabels(t *testing.T) {
	dc, _ := NewDCor(1)
	e := tensor.New(4, 2)
	for k := range e.Data {
		e.Data[k] = float32(k)
	}
	for _, y := range [][]float32{{0, 1, 0.5, 0}, {0, 1, 2, 0}, {0, 1, float32(math.NaN()), 1}} {
		if _, err := dc.AddLossGrad(e, y, tensor.New(4, 2)); err == nil {
			t.Errorf("labels %v accepted", y)
		}
	}
}

func TestDCorDegenerate(t *testing.T) {
	dc, _ := NewDCor(1)
	rng := newRNG(2)
	e := tensor.New(8, 3)
	for k := range e.Data {
		e.Data[k] = float32(rng.NormFloat64())
	}
	konst := tensor.New(8, 3)
	for k := range konst.Data {
		konst.Data[k] = 0.37 * float32(k%3+1)
	}
	mixed := []float32{0, 1, 0, 1, 1, 0, 0, 0}
	for name, c := range map[string]struct {
		e *tensor.Matrix
		y []float32
	}{
		"one class":          {e, make([]float32, 8)},
		"constant embedding": {konst, mixed},
		"single row":         {tensor.New(1, 3), []float32{1}},
	} {
		grad := tensor.New(c.e.Rows, c.e.Cols)
		loss, err := dc.AddLossGrad(c.e, c.y, grad)
		if err != nil || loss != 0 {
			t.Errorf("%s: loss %v, err %v; want 0", name, loss, err)
		}
		for _, g := range grad.Data {
			if g != 0 {
				t.Errorf("%s: non-zero gradient %v", name, grad.Data)
				break
			}
		}
	}
	if _, err := dc.AddLossGrad(e, mixed[:3], tensor.New(8, 3)); err == nil {
		t.Error("short labels accepted")
	}
	if _, err := NewDCor(0); err == nil {
		t.Error("α = 0 accepted")
	}
}

func BenchmarkDCor1024(b *testing.B) {
	rng := newRNG(3)
	e := tensor.New(1024, 64)
	for k := range e.Data {
		e.Data[k] = float32(rng.NormFloat64())
	}
	y := make([]float32, 1024)
	for i := range y {
		y[i] = float32(i % 4 / 3)
	}
	dc, _ := NewDCor(0.003)
	grad := tensor.New(1024, 64)
	b.ResetTimer()
	for range b.N {
		if _, err := dc.AddLossGrad(e, y, grad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDCorCut times one dCor loss-and-gradient call at the authors'
// cut width d = 128 for the batch sizes of the experiments (1024 and 8192):
// experiments/results.md quotes it as the per-batch cost of dCor.
func BenchmarkDCorCut(b *testing.B) {
	for _, n := range []int{1024, 8192} {
		b.Run(fmt.Sprintf("B=%d", n), func(b *testing.B) {
			rng := newRNG(5)
			e := tensor.New(n, 128)
			for k := range e.Data {
				e.Data[k] = float32(rng.NormFloat64())
			}
			y := make([]float32, n)
			for i := range y {
				y[i] = float32(i % 4 / 3)
			}
			dc, _ := NewDCor(0.005)
			grad := tensor.New(n, 128)
			b.ResetTimer()
			for range b.N {
				if _, err := dc.AddLossGrad(e, y, grad); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMarvellProtect(b *testing.B) {
	g, y := twoClassBatch(1, 512, make([]float64, 128), append([]float64{1}, make([]float64, 127)...), 0.3, 0.2)
	p, _ := New("marvell", Params{"marvell_s": 4})
	out := &tensor.Matrix{}
	rng := newRNG(2)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.Protect(&Batch{Grad: g, Labels: y}, out, rng); err != nil {
			b.Fatal(err)
		}
	}
}
