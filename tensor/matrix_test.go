package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRowNormsBitExact: every row's norm equals, bit for bit, the one a
// plain row-by-row loop adding the squares in column order gives — on
// every row count up to past the eight rows summed together, with values of
// very different sizes so that another order of additions would round
// differently — and a hand case.
func TestRowNormsBitExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for rows := range 18 {
		for _, cols := range []int{0, 1, 3, 128, 131} {
			m := New(rows, cols)
			for k := range m.Data {
				m.Data[k] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6)))
			}
			got := make([]float64, rows)
			RowNorms(got, m)
			for i := range rows {
				var s float64
				for k := range cols {
					v := float64(m.Data[i*cols+k])
					s += v * v
				}
				if want := math.Sqrt(s); math.Float64bits(got[i]) != math.Float64bits(want) {
					t.Errorf("%d×%d row %d: norm %v, row by row %v", rows, cols, i, got[i], want)
				}
			}
		}
	}
	m := &Matrix{Rows: 5, Cols: 2, Data: []float32{3, 4, 0, 0, -5, 12, 1, 0, 8, -15}}
	got := make([]float64, 5)
	RowNorms(got, m)
	for i, want := range []float64{5, 0, 13, 1, 17} {
		if got[i] != want {
			t.Errorf("row %d: norm %v, want %v", i, got[i], want)
		}
	}
}

// BenchmarkRowNorms times the norm attack's pass over one layer's
// gradients (1,024 rows of 128).
func BenchmarkRowNorms(b *testing.B) {
	m := New(1024, 128)
	for k := range m.Data {
		m.Data[k] = float32(k%17) - 8
	}
	dst := make([]float64, m.Rows)
	for b.Loop() {
		RowNorms(dst, m)
	}
}
