package data

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestGatherAtAnyCoreCount: Gather copies each asked-for row, in the
// order asked (repeats included), whatever the cores, into a reused
// batch; checked against the table read entry by entry.
func TestGatherAtAnyCoreCount(t *testing.T) {
	const n, nc, nd = 5000, 3, 2
	f := &Features{Rows: n, NumCat: nc, NumDense: nd, Cat: make([]int32, n*nc), Dense: make([]float32, n*nd), Cardinality: []int{1 << 20, 1 << 20, 1 << 20}}
	for i := range f.Cat {
		f.Cat[i] = int32(i)
	}
	for i := range f.Dense {
		f.Dense[i] = float32(i) + 0.5
	}
	r := rand.New(rand.NewPCG(1, 2))
	var b Batch
	for _, procs := range []int{1, 2, 3, 8} {
		for _, rows := range []int{1, 255, 600, 2048} {
			idx := make([]int, rows)
			for i := range idx {
				idx[i] = r.IntN(n)
			}
			if rows > 1 {
				idx[1] = idx[0] // a repeat
			}
			old := runtime.GOMAXPROCS(procs)
			f.Gather(idx, &b)
			runtime.GOMAXPROCS(old)
			if b.Rows != rows || len(b.Cat) != rows*nc || b.Dense.Rows != rows || b.Dense.Cols != nd {
				t.Fatalf("%d procs, %d rows: batch of %d rows, %d ids, %d×%d dense", procs, rows, b.Rows, len(b.Cat), b.Dense.Rows, b.Dense.Cols)
			}
			for i, src := range idx {
				for j := range nc {
					if want := int32(src*nc + j); b.Cat[i*nc+j] != want {
						t.Fatalf("%d procs, %d rows: row %d id %d is %d, want %d", procs, rows, i, j, b.Cat[i*nc+j], want)
					}
				}
				for j := range nd {
					if want := float32(src*nd+j) + 0.5; b.Dense.Data[i*nd+j] != want {
						t.Fatalf("%d procs, %d rows: row %d value %d is %v, want %v", procs, rows, i, j, b.Dense.Data[i*nd+j], want)
					}
				}
			}
		}
	}
}
