//go:build openblas

package tensor

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestOpenBLASSplit checks products large enough to be cut in two, in
// every transposition, against float64 products by the definition, and
// checks that one core (halves in sequence) gives the same bits as two.
func TestOpenBLASSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	rnd := func(rows, cols int) *Matrix {
		m := New(rows, cols)
		for i := range m.Data {
			m.Data[i] = float32(r.NormFloat64())
		}
		return m
	}
	for _, s := range []struct{ m, n, k int }{{1024, 128, 128}, {117, 128, 1024}, {1024, 117, 128}, {100, 300, 200}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				a, b := rnd(s.m, s.k), rnd(s.k, s.n)
				if ta {
					a = rnd(s.k, s.m)
				}
				if tb {
					b = rnd(s.n, s.k)
				}
				c0 := rnd(s.m, s.n)
				want := naive(a, ta, b, tb)
				var got [2]*Matrix
				for p, procs := range []int{1, 2} {
					old := runtime.GOMAXPROCS(procs)
					got[p] = c0.Clone()
					MatMul(got[p], a, ta, b, tb, 0.5, 0.25)
					runtime.GOMAXPROCS(old)
				}
				for i := range s.m {
					for j := range s.n {
						w := 0.5*want[i][j] + 0.25*float64(c0.At(i, j))
						if g := float64(got[1].At(i, j)); math.Abs(g-w) > 1e-4*(1+math.Abs(w)) {
							t.Fatalf("%+v transA %v transB %v: (%d,%d) = %v, want %v", s, ta, tb, i, j, g, w)
						}
						if got[0].At(i, j) != got[1].At(i, j) {
							t.Fatalf("%+v transA %v transB %v: (%d,%d) is %v on one core, %v on two", s, ta, tb, i, j, got[0].At(i, j), got[1].At(i, j))
						}
					}
				}
			}
		}
	}
}

// TestOpenBLASPicksKernel checks that, with no OPENBLAS_CORETYPE set, a
// CPU with AVX-512 gets OpenBLAS's SkylakeX kernels, and that the engine
// names the kernel it runs.
func TestOpenBLASPicksKernel(t *testing.T) {
	name := Default.Name()
	if !strings.HasPrefix(name, "openblas-") || len(name) == len("openblas-") {
		t.Fatalf("engine name %q does not name an OpenBLAS kernel", name)
	}
	if os.Getenv("OPENBLAS_CORETYPE") != "" {
		t.Skip("OPENBLAS_CORETYPE is set")
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512CD && name != "openblas-skylakex" {
		t.Errorf("on a CPU with AVX-512 the engine is %q, want openblas-skylakex", name)
	}
}
