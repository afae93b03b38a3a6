package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func TestSpreadCoversEachElementOnce(t *testing.T) {
	for _, tc := range []struct{ n, procs int }{
		{0, 4}, {10, 4}, {spreadGrain - 1, 8}, {2 * spreadGrain, 2}, {3*spreadGrain + 7, 3}, {100003, 16}, {1 << 20, 7}, {1 << 20, 2}, {1<<19 + 5, 2},
	} {
		old := runtime.GOMAXPROCS(tc.procs)
		seen := make([]int32, tc.n)
		spread(tc.n, func(lo, hi int) {
			if lo%16 != 0 {
				t.Errorf("n %d, %d procs: a part starts at %d, not a multiple of 16", tc.n, tc.procs, lo)
			}
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		runtime.GOMAXPROCS(old)
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n %d, %d procs: element %d visited %d times", tc.n, tc.procs, i, c)
			}
		}
	}
}

// TestSpreadParts: how many parts a pass is cut into, by hand.
func TestSpreadParts(t *testing.T) {
	for _, tc := range []struct{ n, procs, want int }{
		{1 << 20, 1, 1},         // one core: in turn
		{1 << 17, 2, 2},         // a batch of 1024 × 128: one part a core
		{1 << 20, 2, 8},         // 8192 × 128 on two cores: four a core
		{1 << 20, 16, 16},       // sixteen cores: one a core (8 fine parts would be fewer)
		{1<<19 - 16, 2, 2},      // under 4·fineGrain: one a core
		{1 << 19, 2, 4},         // 4·fineGrain: four parts of fineGrain
		{spreadGrain - 1, 8, 0}, // too small to spread
	} {
		old := runtime.GOMAXPROCS(tc.procs)
		got := spreadParts(tc.n)
		runtime.GOMAXPROCS(old)
		if got != tc.want {
			t.Errorf("spreadParts(%d) at %d cores = %d, want %d", tc.n, tc.procs, got, tc.want)
		}
	}
}

// TestDenseReLUAtAnyCoreCount runs a Dense layer and a ReLU forward and
// backward on shapes whose parallel cuts fall inside rows, at several
// core counts, as two layers and fused (DenseReLU, DenseReLUBackward):
// every output, gradient and weight gradient must be the same bit for
// bit (the fused forward keeps no pre-activation: nothing reads it), and
// the forward must match the definition b + x·W summed in float64.
func TestDenseReLUAtAnyCoreCount(t *testing.T) {
	for _, sh := range [][3]int{{1000, 37, 100}, {777, 128, 129}, {8192, 13, 128}} {
		rows, in, out := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(uint64(rows), 9))
		x, dy := tensor.New(rows, in), tensor.New(rows, out)
		randFill(r, x, 1)
		randFill(r, dy, 1)
		var ref [][]float32
		for run := range 8 {
			procs, fused := []int{1, 2, 3, 16}[run/2], run%2 == 1
			old := runtime.GOMAXPROCS(procs)
			d := NewDense(in, out, HeNormal, rand.New(rand.NewPCG(3, 4)))
			for j := range d.B.Data {
				d.B.Data[j] = float32(j%7) - 3
			}
			var relu ReLU
			var y *tensor.Matrix
			if fused {
				y = DenseReLU(d, &relu, x)
			} else {
				y = relu.Forward(d.Forward(x))
			}
			var dx *tensor.Matrix
			if fused {
				dx = DenseReLUBackward(d, &relu, dy)
				// Without the input gradient, the same weight gradients.
				dW, dB := append([]float32(nil), d.dW.Data...), append([]float32(nil), d.dB.Data...)
				d.SkipInputGrad = true
				if DenseReLUBackward(d, &relu, dy) != nil {
					t.Fatalf("%v: DenseReLUBackward with SkipInputGrad returned an input gradient", sh)
				}
				d.SkipInputGrad = false
				if !slices.Equal(dW, d.dW.Data) || !slices.Equal(dB, d.dB.Data) {
					t.Fatalf("%v, GOMAXPROCS %d: weight gradients differ with SkipInputGrad", sh, procs)
				}
			} else {
				dx = d.Backward(relu.Backward(dy))
			}
			got := [][]float32{append([]float32(nil), y.Data...), append([]float32(nil), dx.Data...),
				append([]float32(nil), d.dW.Data...), append([]float32(nil), d.dB.Data...)}
			runtime.GOMAXPROCS(old)
			if ref == nil {
				ref = got
				for i := range rows {
					for j := range out {
						s := float64(d.B.Data[j])
						for k := range in {
							s += float64(x.At(i, k)) * float64(d.W.At(k, j))
						}
						want := math.Max(s, 0)
						if g := float64(y.At(i, j)); math.Abs(g-want) > 1e-4*(1+math.Abs(want)) {
							t.Fatalf("%v: y[%d,%d] = %v, want %v", sh, i, j, g, want)
						}
					}
				}
				continue
			}
			sameBits(t, fmt.Sprintf("%v with GOMAXPROCS %d (fused: %v)", sh, procs, fused), got, ref)
		}
	}
}

// TestDenseBackwardReLUAtAnyCoreCount checks the fused backward of a
// Dense over the ReLU below it against the two Backward calls (bit for
// bit, at GOMAXPROCS 1, 2, 3 and 16) and the ReLU's input gradient
// against its definition in float64, for the step's shapes: hidden
// layers, a logit layer (one output: its input gradient is an outer
// product, k = 1) and batch 8192 (products cut finer than a part per
// core).
func TestDenseBackwardReLUAtAnyCoreCount(t *testing.T) {
	for _, sh := range [][3]int{{1000, 37, 100}, {777, 128, 129}, {1024, 128, 1}, {8192, 128, 128}, {8192, 128, 1}} {
		rows, in, out := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(uint64(rows+out), 10))
		x, dy := tensor.New(rows, in), tensor.New(rows, out)
		randFill(r, x, 1)
		randFill(r, dy, 1)
		var ref [][]float32
		for run := range 5 {
			procs, fused := []int{1, 1, 2, 3, 16}[run], run > 0
			old := runtime.GOMAXPROCS(procs)
			d := NewDense(in, out, HeNormal, rand.New(rand.NewPCG(5, 6)))
			var prev ReLU
			h := prev.Forward(x)
			d.Forward(h)
			var dx, g *tensor.Matrix
			if fused {
				dx, g = DenseBackwardReLU(d, dy, &prev)
			} else {
				dx = d.Backward(dy)
				g = prev.Backward(dx)
			}
			got := [][]float32{append([]float32(nil), dx.Data...), append([]float32(nil), g.Data...),
				append([]float32(nil), d.dW.Data...), append([]float32(nil), d.dB.Data...)}
			runtime.GOMAXPROCS(old)
			if ref == nil {
				ref = got
				// The definition on every row up to 1,000 rows, on every
				// 16th beyond (the other runs are checked bit for bit
				// against this one).
				step := 1
				if rows > 1000 {
					step = 16
				}
				for i := 0; i < rows; i += step {
					for j := range in {
						s := 0.0
						for k := range out {
							s += float64(dy.At(i, k)) * float64(d.W.At(j, k))
						}
						if h.At(i, j) <= 0 {
							s = 0
						}
						if v := float64(g.At(i, j)); math.Abs(v-s) > 1e-4*(1+math.Abs(s)) {
							t.Fatalf("%v: g[%d,%d] = %v, want %v", sh, i, j, v, s)
						}
					}
				}
				continue
			}
			sameBits(t, fmt.Sprintf("%v with GOMAXPROCS %d", sh, procs), got, ref)
		}
	}
	// A Dense whose input is not the ReLU's output is refused.
	d := NewDense(3, 2, HeNormal, rand.New(rand.NewPCG(1, 1)))
	var prev ReLU
	prev.Forward(tensor.New(4, 3))
	d.Forward(tensor.New(4, 3))
	defer func() {
		if recover() == nil {
			t.Error("DenseBackwardReLU on a Dense that did not read the ReLU's output: no panic")
		}
	}()
	DenseBackwardReLU(d, tensor.New(4, 2), &prev)
}

// sameBits fails t unless every output of got has ref's bits.
func sameBits(t *testing.T, what string, got, ref [][]float32) {
	t.Helper()
	for k := range got {
		for i := range got[k] {
			if math.Float32bits(got[k][i]) != math.Float32bits(ref[k][i]) {
				t.Fatalf("%s: output %d differs at %d: %v vs %v", what, k, i, got[k][i], ref[k][i])
			}
		}
	}
}

// TestSpreadRowsCoversEachRowOnce checks spreadRows' cuts: every row of
// [0, rows) in exactly one call, in ranges, on one core and on several,
// for passes too small and large enough to be cut.
func TestSpreadRowsCoversEachRowOnce(t *testing.T) {
	for _, tc := range []struct{ rows, width, procs int }{
		{0, 100, 4}, {1, 1 << 20, 4}, {3, 8, 4}, {7, 1 << 15, 2}, {128, 4608, 16}, {5, 1 << 18, 16}, {1000, 1 << 10, 3},
	} {
		old := runtime.GOMAXPROCS(tc.procs)
		want := min(spreadParts(tc.rows*tc.width), tc.rows)
		seen := make([]atomic.Int32, tc.rows)
		calls := atomic.Int32{}
		spreadRows(tc.rows, tc.width, func(r0, r1 int) {
			calls.Add(1)
			if r0 < 0 || r1 > tc.rows || r0 > r1 {
				t.Errorf("%+v: call for rows [%d, %d)", tc, r0, r1)
				return
			}
			for r := r0; r < r1; r++ {
				seen[r].Add(1)
			}
		})
		runtime.GOMAXPROCS(old)
		for r := range seen {
			if n := seen[r].Load(); n != 1 {
				t.Errorf("%+v: row %d covered %d times", tc, r, n)
			}
		}
		if want >= 2 && int(calls.Load()) != want {
			t.Errorf("%+v: %d calls, want %d parts", tc, calls.Load(), want)
		}
	}
}
