package tensor

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// naive computes op(a)·op(b) in float64 by the definition.
func naive(a *Matrix, ta bool, b *Matrix, tb bool) [][]float64 {
	get := func(m *Matrix, t bool, i, j int) float64 {
		if t {
			return float64(m.At(j, i))
		}
		return float64(m.At(i, j))
	}
	m, k := a.Rows, a.Cols
	if ta {
		m, k = k, m
	}
	n := b.Cols
	if tb {
		n = b.Rows
	}
	out := make([][]float64, m)
	for i := range m {
		out[i] = make([]float64, n)
		for j := range n {
			for l := range k {
				out[i][j] += get(a, ta, i, l) * get(b, tb, l, j)
			}
		}
	}
	return out
}

func randMatrix(r *rand.Rand, rows, cols int) *Matrix {
	m := New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

func TestMatMulAgainstDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		m, n, k int
		ta, tb  bool
	}{
		{3, 4, 5, false, false}, {3, 4, 5, true, false}, {3, 4, 5, false, true}, {3, 4, 5, true, true},
		{1, 1, 1, false, false}, {17, 9, 33, true, true}, {64, 32, 7, false, true},
	} {
		ar, ac := tc.m, tc.k
		if tc.ta {
			ar, ac = ac, ar
		}
		br, bc := tc.k, tc.n
		if tc.tb {
			br, bc = bc, br
		}
		a, b := randMatrix(r, ar, ac), randMatrix(r, br, bc)
		c0 := randMatrix(r, tc.m, tc.n)
		want := naive(a, tc.ta, b, tc.tb)
		c := c0.Clone()
		MatMul(c, a, tc.ta, b, tc.tb, 2, 0.5)
		for i := range tc.m {
			for j := range tc.n {
				w := 2*want[i][j] + 0.5*float64(c0.At(i, j))
				if got := float64(c.At(i, j)); math.Abs(got-w) > 1e-4*(1+math.Abs(w)) {
					t.Fatalf("%+v: c[%d][%d] = %v, want %v (engine %s)", tc, i, j, got, w, Default.Name())
				}
			}
		}
		var fresh Matrix
		MatMul(&fresh, a, tc.ta, b, tc.tb, 1, 0)
		if fresh.Rows != tc.m || fresh.Cols != tc.n {
			t.Fatalf("beta=0 result shape %d×%d, want %d×%d", fresh.Rows, fresh.Cols, tc.m, tc.n)
		}
	}
}

func TestMatMulShapeMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for 2×3 · 2×3")
		}
	}()
	MatMul(New(2, 2), New(2, 3), false, New(2, 3), false, 1, 0)
}

func TestCheckFinite(t *testing.T) {
	m := New(2, 3)
	if err := CheckFinite("x", m); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		m.Set(1, 2, bad)
		err := CheckFinite("cut gradient", m)
		nf, ok := err.(*NotFiniteError)
		if !ok || nf.Row != 1 || nf.Col != 2 {
			t.Fatalf("CheckFinite(%v) = %v, want row 1 col 2", bad, err)
		}
	}
}

func BenchmarkSgemm1024x128x128(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	a, w := randMatrix(r, 1024, 128), randMatrix(r, 128, 128)
	var c Matrix
	b.ReportAllocs()
	for b.Loop() {
		MatMul(&c, a, false, w, false, 1, 0)
	}
	b.ReportMetric(float64(2*1024*128*128)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestCheckFiniteFindsTheFirstAtAnyCoreCount puts non-finite values in
// a matrix long enough to be checked on several cores: the error must
// name the first one in row-major order whatever GOMAXPROCS is.
func TestCheckFiniteFindsTheFirstAtAnyCoreCount(t *testing.T) {
	const rows, cols = 8192, 129
	for _, bad := range [][]int{{rows*cols - 1}, {5 * checkGrain, 3}, {7*checkGrain + 1, 6 * checkGrain}, {0, rows*cols - 1}} {
		m := New(rows, cols)
		for _, k := range bad {
			m.Data[k] = float32(math.Inf(-1))
		}
		want := slices.Min(bad)
		for _, procs := range []int{1, 2, 3, 16} {
			old := runtime.GOMAXPROCS(procs)
			err := CheckFinite("g", m)
			runtime.GOMAXPROCS(old)
			nf, ok := err.(*NotFiniteError)
			if !ok || nf.Row*cols+nf.Col != want {
				t.Fatalf("non-finite at %v, GOMAXPROCS %d: %v, want row %d col %d", bad, procs, err, want/cols, want%cols)
			}
		}
	}
}
