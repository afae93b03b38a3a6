package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"unsafe"
)

// testEngines is every engine this machine runs: one SIMDEngine per
// supported micro-kernel (the test hook that forces each), and gonum.
func testEngines() []Engine {
	es := []Engine{GonumEngine{}}
	for _, e := range simdEngines() {
		es = append(es, e)
	}
	return es
}

// tripleLoop computes alpha·op(A)·op(B) + beta·C in float64 by the
// definition, from strided storage; with beta == 0, C is not read.
func tripleLoop(ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				var av, bv float32
				if ta {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tb {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			s *= float64(alpha)
			if beta != 0 {
				s += float64(beta) * float64(c[i*ldc+j])
			}
			out[i*n+j] = s
		}
	}
	return out
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func TestSgemmEnginesAgainstTripleLoop(t *testing.T) {
	shapes := [][3]int{ // m, n, k
		{1, 1, 1}, {3, 3, 1}, {1, 40, 7}, {40, 1, 7}, {5, 3, 2}, {7, 17, 3},
		{8, 32, 1}, {6, 16, 5}, {130, 2, 300}, {3, 2, 1000}, {9, 33, 17}, {13, 31, 64}, {24, 48, 33},
		{47, 65, 129}, {64, 64, 64}, {117, 128, 100}, {100, 117, 300},
		{385, 70, 40}, {33, 2100, 9}, {130, 50, 600},
	}
	if testing.Short() {
		shapes = shapes[:14]
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, e := range testEngines() {
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				for _, ab := range [][2]float32{{1, 0}, {-0.5, 0}, {1, 1}, {2, -0.75}} {
					ta, tb := tr[0], tr[1]
					alpha, beta := ab[0], ab[1]
					ar, ac := m, k
					if ta {
						ar, ac = k, m
					}
					br, bc := k, n
					if tb {
						br, bc = n, k
					}
					// Strides wider than the rows, by a shape-dependent pad.
					lda, ldb, ldc := ac+(m%3), bc+(n%4), n+(k%5)
					a := randSlice(r, (ar-1)*lda+ac)
					b := randSlice(r, (br-1)*ldb+bc)
					c := randSlice(r, (m-1)*ldc+n+3)
					if beta == 0 { // garbage that must not leak into the result
						for i := range c {
							c[i] = float32(math.NaN())
						}
					}
					want := tripleLoop(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
					got := slices.Clone(c)
					e.Sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, got, ldc)
					name := fmt.Sprintf("%s m=%d n=%d k=%d ta=%v tb=%v alpha=%v beta=%v", e.Name(), m, n, k, ta, tb, alpha, beta)
					for i := range m {
						for j := range n {
							w, g := want[i*n+j], float64(got[i*ldc+j])
							if math.Abs(g-w) > 1e-5*float64(k)*(1+math.Abs(w)) || math.IsNaN(g) {
								t.Fatalf("%s: C[%d][%d] = %v, want %v", name, i, j, g, w)
							}
						}
						// The padding between rows is untouched.
						for j := n; j < ldc && i*ldc+j < len(c); j++ {
							if g, w := got[i*ldc+j], c[i*ldc+j]; math.Float32bits(g) != math.Float32bits(w) {
								t.Fatalf("%s: padding C[%d][%d] changed from %v to %v", name, i, j, w, g)
							}
						}
					}
				}
			}
		}
	}
}

func TestSgemmZeroK(t *testing.T) {
	for _, e := range simdEngines() {
		c := []float32{1, 2, 3, 4}
		e.Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0.5, c, 2)
		if !slices.Equal(c, []float32{0.5, 1, 1.5, 2}) {
			t.Errorf("%s: k=0, beta=0.5 gave %v", e.Name(), c)
		}
		nan := float32(math.NaN())
		c = []float32{nan, nan}
		e.Sgemm(false, false, 1, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
		if !slices.Equal(c, []float32{0, 0}) {
			t.Errorf("%s: k=0, beta=0 gave %v", e.Name(), c)
		}
	}
}

// TestSgemmDeterministic checks that a kernel gives bit-identical results
// for one shape whatever GOMAXPROCS is (the parallel cut falls on tiles).
func TestSgemmDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, e := range simdEngines() {
		for _, sh := range [][5]int{{1024, 128, 117, 0, 0}, {117, 128, 1024, 1, 0}, {1024, 117, 128, 0, 1}, {50, 1000, 300, 0, 0}, {128, 128, 8192, 1, 0}, {130, 100, 4000, 1, 1}, {8192, 1, 128, 0, 0}, {5000, 2, 300, 0, 1}, {8192, 128, 128, 0, 0}, {4100, 117, 128, 0, 1},
			{1024, 1, 128, 0, 0}, {128, 1, 1024, 1, 0}, {128, 1, 8192, 1, 0}, {1000, 2, 700, 1, 0}, {1024, 128, 1, 0, 1}, {8192, 128, 1, 0, 1}} {
			m, n, kk, ta, tb, a, b, lda, ldb := operands(r, sh)
			var ref []float32
			for _, procs := range []int{1, 2, 3, 7, 16} {
				old := runtime.GOMAXPROCS(procs)
				c := make([]float32, m*n)
				e.Sgemm(ta, tb, m, n, kk, 1, a, lda, b, ldb, 0, c, n)
				runtime.GOMAXPROCS(old)
				if ref == nil {
					ref = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("%s %v: GOMAXPROCS %d differs at %d: %v vs %v", e.Name(), sh, procs, i, c[i], ref[i])
					}
				}
			}
		}
	}
}

func TestSgemmShortOperandPanics(t *testing.T) {
	for _, e := range simdEngines() {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for a 4×4 A held in 15 values", e.Name())
				}
			}()
			e.Sgemm(false, false, 4, 4, 4, 1, make([]float32, 15), 4, make([]float32, 16), 4, 0, make([]float32, 16), 4)
		}()
	}
}

func BenchmarkSgemmEngines(b *testing.B) {
	shapes := [][5]int{ // m, n, k, transA, transB: the WDL step's products
		{1024, 128, 117, 0, 0}, {1024, 128, 128, 0, 0}, {117, 128, 1024, 1, 0}, {1024, 117, 128, 0, 1}, {512, 512, 512, 0, 0},
		{1024, 1, 128, 0, 0}, {128, 1, 1024, 1, 0}, {1024, 128, 1, 0, 1},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, e := range testEngines() {
		for _, sh := range shapes {
			m, n, k, ta, tb := sh[0], sh[1], sh[2], sh[3] == 1, sh[4] == 1
			a, w := randSlice(r, m*k), randSlice(r, k*n)
			lda, ldb := k, n
			if ta {
				lda = m
			}
			if tb {
				ldb = k
			}
			c := make([]float32, m*n)
			b.Run(fmt.Sprintf("%s/%dx%dx%d_t%d%d", e.Name(), m, n, k, sh[3], sh[4]), func(b *testing.B) {
				for b.Loop() {
					e.Sgemm(ta, tb, m, n, k, 1, a, lda, w, ldb, 0, c, n)
				}
				b.ReportMetric(float64(2*m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSgemmIndependentOfAlignment checks that where the operands sit in
// memory does not change a single bit of the product: the same values
// placed at each offset of 0–3 floats from a 64-byte boundary give the same
// C. (gonum's assembly dot product, once used for thin products, sums in an
// order that depends on the operand's address.)
func TestSgemmIndependentOfAlignment(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	place := func(x []float32, off int) []float32 {
		buf := make([]float32, len(x)+16)
		base := int(uintptr(unsafe.Pointer(&buf[0]))/4) % 16
		start := (16-base)%16 + off
		if start+len(x) > len(buf) {
			start -= 16
		}
		s := buf[start : start+len(x)]
		copy(s, x)
		return s
	}
	for _, e := range testEngines() {
		for _, sh := range [][5]int{{16, 1, 5, 0, 0}, {1024, 1, 128, 0, 0}, {128, 1, 1024, 1, 0}, {64, 2, 37, 0, 1}, {7, 9, 11, 0, 1}, {5, 6, 7, 1, 1}, {40, 33, 29, 0, 1}} {
			m, n, kk, ta, tb, a, b, lda, ldb := operands(r, sh)
			var ref []float32
			for off := range 4 {
				c := make([]float32, m*n)
				e.Sgemm(ta, tb, m, n, kk, 1, place(a, off), lda, place(b, (off+1)%4), ldb, 0, c, n)
				if ref == nil {
					ref = c
					continue
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("%s %v: operands at offset %d differ at %d: %v vs %v", e.Name(), sh, off, i, c[i], ref[i])
					}
				}
			}
		}
	}
}

// operands draws the operands of the product of shape sh = {m, n, k,
// transA, transB} with their row strides.
func operands(r *rand.Rand, sh [5]int) (m, n, k int, ta, tb bool, a, b []float32, lda, ldb int) {
	m, n, k, ta, tb = sh[0], sh[1], sh[2], sh[3] == 1, sh[4] == 1
	a, b = randSlice(r, m*k), randSlice(r, k*n)
	lda, ldb = k, n
	if ta {
		lda = m
	}
	if tb {
		ldb = k
	}
	return
}
