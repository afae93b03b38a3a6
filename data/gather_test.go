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

// TestSelectRowsCopiesEachRow: SelectRows of rows with runs, gaps,
// repeats and reversals copies each asked-for row, checked entry by
// entry against the table.
func TestSelectRowsCopiesEachRow(t *testing.T) {
	const n, nc, nd = 50, 3, 2
	d := &Dataset{IDs: make([]uint64, n), Labels: make([]uint8, n),
		X: &Features{Rows: n, NumCat: nc, NumDense: nd, Cat: make([]int32, n*nc), Dense: make([]float32, n*nd), Cardinality: []int{1000, 1000, 1000}}}
	for i := range n {
		d.IDs[i], d.Labels[i] = uint64(100+i), uint8(i%2)
	}
	for i := range d.X.Cat {
		d.X.Cat[i] = int32(i)
	}
	for i := range d.X.Dense {
		d.X.Dense[i] = float32(i) + 0.25
	}
	for _, rows := range [][]int{nil, {0}, {49}, {0, 1, 2, 3}, {5, 6, 7, 9, 10, 10, 11, 3, 2, 1, 40, 41}, {49, 48, 47}} {
		got := SelectRows(d, rows)
		if got.X.Rows != len(rows) || len(got.IDs) != len(rows) || len(got.X.Cat) != len(rows)*nc || len(got.X.Dense) != len(rows)*nd {
			t.Fatalf("rows %v: %d rows, %d IDs, %d ids, %d values", rows, got.X.Rows, len(got.IDs), len(got.X.Cat), len(got.X.Dense))
		}
		for i, r := range rows {
			if got.IDs[i] != uint64(100+r) || got.Labels[i] != uint8(r%2) {
				t.Fatalf("rows %v: row %d has ID %d label %d, want %d %d", rows, i, got.IDs[i], got.Labels[i], 100+r, r%2)
			}
			for j := range nc {
				if got.X.Cat[i*nc+j] != int32(r*nc+j) {
					t.Fatalf("rows %v: row %d id %d is %d, want %d", rows, i, j, got.X.Cat[i*nc+j], r*nc+j)
				}
			}
			for j := range nd {
				if got.X.Dense[i*nd+j] != float32(r*nd+j)+0.25 {
					t.Fatalf("rows %v: row %d value %d is %v, want %v", rows, i, j, got.X.Dense[i*nd+j], float32(r*nd+j)+0.25)
				}
			}
		}
	}
}
