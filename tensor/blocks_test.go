package tensor

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestMatMulBlocks checks, for every engine this CPU runs and at 1, 2 and
// 8 cores, on products cut into row ranges, into a grid of row and column
// ranges, and not cut at all: that before and after each visit every
// entry of C exactly once, that after sees the product's final value of
// every entry of its block, and that with before setting C's starting
// values (beta 1) the result is the float64 product by the definition
// plus those values.
func TestMatMulBlocks(t *testing.T) {
	defer func(e Engine) { Default = e }(Default)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := []struct {
		name    string
		m, n, k int
		transA  bool
	}{
		{"tall, row ranges", 2048, 128, 117, false},
		{"small C, long k: a grid", 128, 128, 2048, true},
		{"too small to cut", 16, 24, 8, false},
		{"thin", 300, 2, 64, false},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	as, bs, wants := make([]*Matrix, len(shapes)), make([]*Matrix, len(shapes)), make([][][]float64, len(shapes))
	for s, sh := range shapes {
		ar, ac := sh.m, sh.k
		if sh.transA {
			ar, ac = sh.k, sh.m
		}
		as[s], bs[s] = randMatrix(rng, ar, ac), randMatrix(rng, sh.k, sh.n)
		wants[s] = naive(as[s], sh.transA, bs[s], false)
	}
	for _, e := range Engines() {
		Default = e
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			for s, sh := range shapes {
				a, b, want := as[s], bs[s], wants[s]
				c := New(sh.m, sh.n)
				start := func(i, j int) float32 { return float32(i%7) - float32(j%5)/4 }
				var beforeVisits, afterVisits = make([]atomic.Int32, sh.m*sh.n), make([]atomic.Int32, sh.m*sh.n)
				final := make([]float32, sh.m*sh.n)
				MatMulBlocks(c, a, sh.transA, b, false, 1, 1,
					func(i0, i1, j0, j1 int) {
						for i := i0; i < i1; i++ {
							for j := j0; j < j1; j++ {
								beforeVisits[i*sh.n+j].Add(1)
								c.Data[i*sh.n+j] = start(i, j)
							}
						}
					},
					func(i0, i1, j0, j1 int) {
						for i := i0; i < i1; i++ {
							for j := j0; j < j1; j++ {
								afterVisits[i*sh.n+j].Add(1)
								final[i*sh.n+j] = c.Data[i*sh.n+j]
							}
						}
					})
				for i := range sh.m {
					for j := range sh.n {
						at := i*sh.n + j
						if nb, na := beforeVisits[at].Load(), afterVisits[at].Load(); nb != 1 || na != 1 {
							t.Fatalf("%s, %d cores, %s: entry (%d,%d) visited %d times before, %d after; want once each", e.Name(), procs, sh.name, i, j, nb, na)
						}
						if final[at] != c.Data[at] {
							t.Fatalf("%s, %d cores, %s: after saw %v at (%d,%d), the product ended with %v", e.Name(), procs, sh.name, final[at], i, j, c.Data[at])
						}
						w := want[i][j] + float64(start(i, j))
						if d := math.Abs(float64(c.Data[at]) - w); d > 1e-4*(1+math.Abs(w))*math.Sqrt(float64(sh.k)) {
							t.Fatalf("%s, %d cores, %s: (%d,%d) = %v, want %v", e.Name(), procs, sh.name, i, j, c.Data[at], w)
						}
					}
				}
			}
		}
	}
}

// TestMatMulMany checks that the products of one MatMulMany are bit for
// bit those of MatMul called on each (whose results TestMatMulAgainst
// Definition checks), for every engine at 1, 2 and 8 cores, with a
// product cut into a grid, one into row ranges and one too small to cut,
// and that each extra part runs exactly once.
func TestMatMulMany(t *testing.T) {
	defer func(e Engine) { Default = e }(Default)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	rng := rand.New(rand.NewPCG(3, 5))
	x, g, w := randMatrix(rng, 2048, 117), randMatrix(rng, 2048, 128), randMatrix(rng, 117, 128)
	s1, s2 := randMatrix(rng, 5, 7), randMatrix(rng, 7, 3)
	for _, e := range Engines() {
		Default = e
		for _, procs := range []int{1, 2, 8} {
			runtime.GOMAXPROCS(procs)
			var dW, dx, small, wdW, wdx, wsmall Matrix
			MatMul(&wdW, x, true, g, false, 1, 0)
			MatMul(&wdx, g, false, w, true, 1, 0)
			MatMul(&wsmall, s1, false, s2, false, 0.5, 0)
			for _, extra := range []int{0, 1, 5} {
				ran := make([]atomic.Int32, extra)
				// dx's After copies each block it is given, once written.
				cover := make([]atomic.Int32, len(wdx.Data))
				seen := make([]float32, len(wdx.Data))
				after := func(i0, i1, j0, j1 int) {
					for i := i0; i < i1; i++ {
						for j := j0; j < j1; j++ {
							cover[i*dx.Cols+j].Add(1)
							seen[i*dx.Cols+j] = dx.Data[i*dx.Cols+j]
						}
					}
				}
				MatMulMany([]Product{
					{C: &dW, A: x, TransA: true, B: g, Alpha: 1},
					{C: &dx, A: g, B: w, TransB: true, Alpha: 1, After: after},
					{C: &small, A: s1, B: s2, Alpha: 0.5},
				}, extra, func(p int) { ran[p].Add(1) })
				for i := range seen {
					if n := cover[i].Load(); n != 1 || math.Float32bits(seen[i]) != math.Float32bits(wdx.Data[i]) {
						t.Fatalf("%s, %d cores: After saw entry %d of g·wᵀ %d times, last as %v (want once, as %v)", e.Name(), procs, i, n, seen[i], wdx.Data[i])
					}
				}
				for name, pair := range map[string][2]*Matrix{"xᵀ·g": {&dW, &wdW}, "g·wᵀ": {&dx, &wdx}, "small": {&small, &wsmall}} {
					got, want := pair[0], pair[1]
					if !SameShape(got, want) {
						t.Fatalf("%s, %d cores: %s is %d×%d, want %d×%d", e.Name(), procs, name, got.Rows, got.Cols, want.Rows, want.Cols)
					}
					for i := range want.Data {
						if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
							t.Fatalf("%s, %d cores: %s differs from MatMul's at %d: %v vs %v", e.Name(), procs, name, i, got.Data[i], want.Data[i])
						}
					}
				}
				for p := range ran {
					if n := ran[p].Load(); n != 1 {
						t.Fatalf("%s, %d cores: extra part %d of %d ran %d times", e.Name(), procs, p, extra, n)
					}
				}
			}
		}
	}
}

// TestSplitProductsAllocateOnlyTheRegion checks that a product split over
// two cores, alone (MatMulBlocks, MatMul) or several in one region
// (MatMulMany, its products in an array on the caller's stack), allocates
// no more than the parallel region's own record in internal/par: the
// products, their cuts and the function the cores run come from a pool.
// Before, MatMulMany moved its array of products to the heap and built a
// closure on every call (three allocations), MatMulBlocks a closure (two).
func TestSplitProductsAllocateOnlyTheRegion(t *testing.T) {
	defer func(e Engine) { Default = e }(Default)
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates, and its sync.Pool drops what it is given at random")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rng := rand.New(rand.NewPCG(7, 11))
	x, g, w := randMatrix(rng, 1024, 96), randMatrix(rng, 1024, 128), randMatrix(rng, 96, 128)
	var dW, dx, y Matrix
	var sums [128]float32
	for _, e := range Engines() {
		if _, ok := e.(SIMDEngine); !ok {
			continue
		}
		Default = e
		extra := func(int) { sums[0]++ } // made once: a closure made per call would be the test's allocation
		many := func() {
			ps := [2]Product{{C: &dW, A: x, TransA: true, B: g, Alpha: 1}, {C: &dx, A: g, B: w, TransB: true, Alpha: 1}}
			MatMulMany(ps[:], 1, extra)
		}
		blocks := func() { MatMulBlocks(&y, x, false, w, false, 1, 0, nil, nil) }
		for name, f := range map[string]func(){"MatMulMany": many, "MatMulBlocks": blocks} {
			f() // size the outputs, fill the pools
			if n := allocsAtCores(200, f); n >= 1.5 {
				t.Errorf("%s: %s allocates %v times a call, want 1 (internal/par's region; a pool emptied by a collection adds a few)", e.Name(), name, n)
			}
		}
	}
}

// allocsAtCores is testing.AllocsPerRun without its switch to one core
// (on one core nothing is split): the heap allocations per call of f,
// averaged over runs calls, at the GOMAXPROCS in force.
func allocsAtCores(runs int, f func()) float64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

// TestMatMulBiasMatchesCopiedBias checks MatMulBias against its
// definition in the old form: a before pass copying the bias into every
// row of its block, then MatMulBlocks with beta 1. For every engine at 1,
// 2 and 16 cores and on shapes that take each path of the SIMD engines —
// whole tiles, partial tiles of rows and columns, k over one block of 256
// (the second block adds to what the first stored), a grid, thin and tiny
// products, transposed operands, k = 0 — the two must agree bit for bit,
// and after must see each entry once, with its final value. A kernel that
// read C instead of the bias, or skipped it, would differ in every entry
// (C starts filled with NaN).
func TestMatMulBiasMatchesCopiedBias(t *testing.T) {
	defer func(e Engine) { Default = e }(Default)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := []struct {
		name           string
		m, n, k        int
		transA, transB bool
	}{
		{"tall, whole tiles", 2048, 128, 117, false, false},
		{"partial tiles both ways", 203, 77, 45, false, false},
		{"k over one block", 300, 96, 600, false, false},
		{"grid, transposed A", 128, 128, 2048, true, false},
		{"transposed B", 515, 40, 70, false, true},
		{"thin", 300, 2, 64, false, false},
		{"thin, cut", 9000, 1, 128, false, false},
		{"tiny", 3, 5, 7, false, false},
		{"k zero", 40, 33, 0, false, false},
	}
	rng := rand.New(rand.NewPCG(17, 19))
	for _, e := range testEngines() {
		Default = e
		for _, procs := range []int{1, 2, 16} {
			runtime.GOMAXPROCS(procs)
			for _, sh := range shapes {
				ar, ac := sh.m, sh.k
				if sh.transA {
					ar, ac = sh.k, sh.m
				}
				br, bc := sh.k, sh.n
				if sh.transB {
					br, bc = sh.n, sh.k
				}
				a, b := randMatrix(rng, ar, ac), randMatrix(rng, br, bc)
				bias := randSlice(rng, sh.n)
				want := New(sh.m, sh.n)
				MatMulBlocks(want, a, sh.transA, b, sh.transB, 1, 1, func(i0, i1, j0, j1 int) {
					for i := i0; i < i1; i++ {
						copy(want.Data[i*sh.n+j0:i*sh.n+j1], bias[j0:j1])
					}
				}, nil)
				got := New(sh.m, sh.n)
				for i := range got.Data {
					got.Data[i] = float32(math.NaN())
				}
				seen := make([]atomic.Int32, sh.m*sh.n)
				final := make([]float32, sh.m*sh.n)
				MatMulBias(got, a, sh.transA, b, sh.transB, bias, func(i0, i1, j0, j1 int) {
					for i := i0; i < i1; i++ {
						for j := j0; j < j1; j++ {
							seen[i*sh.n+j].Add(1)
							final[i*sh.n+j] = got.Data[i*sh.n+j]
						}
					}
				})
				for i := range want.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%s, %d cores, %s: entry (%d,%d) = %v, with the bias copied first %v", e.Name(), procs, sh.name, i/sh.n, i%sh.n, got.Data[i], want.Data[i])
					}
					if n := seen[i].Load(); n != 1 || math.Float32bits(final[i]) != math.Float32bits(got.Data[i]) {
						t.Fatalf("%s, %d cores, %s: after saw entry (%d,%d) %d times, last as %v (want once, as %v)", e.Name(), procs, sh.name, i/sh.n, i%sh.n, n, final[i], got.Data[i])
					}
				}
			}
		}
	}
}

// TestMatMulBiasWidthPanics: a bias of the wrong width is refused.
func TestMatMulBiasWidthPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MatMulBias took 3 biases for a product 4 wide")
		}
	}()
	MatMulBias(New(2, 4), New(2, 3), false, New(3, 4), false, make([]float32, 3), nil)
}
