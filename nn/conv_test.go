package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// convCase is one convolution shape; colFloats > 0 forces small im2col
// chunks so that the chunked path is exercised.
type convCase struct {
	B, H, W, Cin, Cout, K int
	colFloats             int
}

func (c convCase) String() string {
	return fmt.Sprintf("B%d_%dx%dx%d_to_%d_k%d_col%d", c.B, c.H, c.W, c.Cin, c.Cout, c.K, c.colFloats)
}

var convCases = []convCase{
	{B: 2, H: 5, W: 4, Cin: 3, Cout: 2, K: 3},
	{B: 3, H: 6, W: 7, Cin: 2, Cout: 4, K: 3, colFloats: 1},    // one image per chunk
	{B: 5, H: 4, W: 4, Cin: 2, Cout: 3, K: 3, colFloats: 1200}, // two images per worker chunk, ragged last
	{B: 2, H: 5, W: 5, Cin: 1, Cout: 2, K: 5},                  // kernel wider than half the image
	{B: 2, H: 4, W: 3, Cin: 2, Cout: 2, K: 2},                  // even kernel: extra pad bottom/right
	{B: 2, H: 3, W: 3, Cin: 4, Cout: 3, K: 1},                  // 1×1: a per-pixel Dense
	{B: 1, H: 1, W: 1, Cin: 3, Cout: 2, K: 3},                  // single pixel: only the centre tap
}

func randFill(r *rand.Rand, m *tensor.Matrix, scale float64) {
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64() * scale)
	}
}

// naiveConv is the definition of a stride-1 'same' convolution in
// float64, with direct loops: the independent reference for Forward.
func naiveConv(x *tensor.Matrix, w, bias []float32, H, W, Cin, Cout, K int) []float64 {
	P := (K - 1) / 2
	out := make([]float64, x.Rows*H*W*Cout)
	for b := range x.Rows {
		for r := range H {
			for q := range W {
				for o := range Cout {
					s := float64(bias[o])
					for i := range K {
						for j := range K {
							rr, qq := r+i-P, q+j-P
							if rr < 0 || rr >= H || qq < 0 || qq >= W {
								continue
							}
							for ch := range Cin {
								xv := float64(x.At(b, (rr*W+qq)*Cin+ch))
								wv := float64(w[((i*K+j)*Cin+ch)*Cout+o])
								s += xv * wv
							}
						}
					}
					out[((b*H+r)*W+q)*Cout+o] = s
				}
			}
		}
	}
	return out
}

func newCase(r *rand.Rand, tc convCase) (*Conv2D, *tensor.Matrix) {
	c := NewConv2D(tc.H, tc.W, tc.Cin, tc.Cout, tc.K, r)
	c.MaxColFloats = tc.colFloats
	randFill(r, c.Bias, 1)
	x := tensor.New(tc.B, tc.H*tc.W*tc.Cin)
	randFill(r, x, 1)
	return c, x
}

func TestConv2DForwardAgainstDirectLoops(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, tc := range convCases {
		t.Run(tc.String(), func(t *testing.T) {
			c, x := newCase(r, tc)
			want := naiveConv(x, c.Weight.Data, c.Bias.Data, tc.H, tc.W, tc.Cin, tc.Cout, tc.K)
			for pass := range 2 { // the second pass reuses every buffer
				y := c.Forward(x)
				if y.Rows != tc.B || y.Cols != tc.H*tc.W*tc.Cout {
					t.Fatalf("output %d×%d, want %d×%d", y.Rows, y.Cols, tc.B, tc.H*tc.W*tc.Cout)
				}
				for k, w := range want {
					if got := float64(y.Data[k]); math.Abs(got-w) > 1e-5*(1+math.Abs(w)) {
						t.Fatalf("pass %d: y[%d] = %v, direct loops give %v", pass, k, got, w)
					}
				}
			}
		})
	}
}

// TestConv2DGradients checks ∂L/∂x, ∂L/∂W and ∂L/∂b against central
// differences of L = Σ P∘conv(x); the map is linear in each, so the
// differences are exact up to float32 rounding.
func TestConv2DGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 1))
	for _, tc := range convCases {
		t.Run(tc.String(), func(t *testing.T) {
			c, x := newCase(r, tc)
			y := c.Forward(x)
			P := gradcheck.Projection(r, y.Rows, y.Cols)
			loss := func() float64 { return gradcheck.Project(P, c.Forward(x)) }
			c.Forward(x)
			dx := c.Backward(P).Clone()
			dW, dB := c.dW.Clone(), c.dB.Clone()
			aud := c.InputGrad(P).Clone()
			for _, chk := range []struct {
				name     string
				x, grads []float32
			}{
				{"x", x.Data, dx.Data},
				{"x (InputGrad)", x.Data, aud.Data},
				{"W", c.Weight.Data, dW.Data},
				{"b", c.Bias.Data, dB.Data},
			} {
				idx := gradcheck.Sample(r, len(chk.x), 60)
				if err := gradcheck.Check(chk.name, loss, chk.x, chk.grads, idx, 1e-2, gradcheck.Default); err != nil {
					t.Fatal(err)
				}
			}
			// A first layer may skip its input gradient without changing
			// the parameter gradients.
			c.SkipInputGrad = true
			c.Forward(x)
			if got := c.Backward(P); got != nil {
				t.Fatal("Backward with SkipInputGrad returned an input gradient")
			}
			for k := range dW.Data {
				if c.dW.Data[k] != dW.Data[k] {
					t.Fatalf("dW[%d] = %v with SkipInputGrad, %v without", k, c.dW.Data[k], dW.Data[k])
				}
			}
		})
	}
}

func TestConv2DHeInit(t *testing.T) {
	c := NewConv2D(8, 8, 16, 64, 3, rand.New(rand.NewPCG(5, 1)))
	var s, s2 float64
	for _, v := range c.Weight.Data {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	n := float64(len(c.Weight.Data))
	mean, variance := s/n, s2/n-(s/n)*(s/n)
	want := 2.0 / (3 * 3 * 16)
	if math.Abs(mean) > 0.01 || math.Abs(variance/want-1) > 0.05 {
		t.Fatalf("He init: mean %v, variance %v, want 0 and %v", mean, variance, want)
	}
	for _, v := range c.Bias.Data {
		if v != 0 {
			t.Fatal("biases not zero at init")
		}
	}
}

// TestConv2DAllocsDoNotGrowWithTheBatch checks that after a warm-up a
// step allocates only the few bytes of starting its second goroutine
// (at most 3 allocations per call), however many images the batch holds.
func TestConv2DAllocsDoNotGrowWithTheBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates: allocation counts are not the code's")
	}
	var got []float64
	for _, B := range []int{4, 32} {
		r := rand.New(rand.NewPCG(6, 1))
		c, x := newCase(r, convCase{B: B, H: 8, W: 8, Cin: 3, Cout: 4, K: 3, colFloats: 1400})
		dy := tensor.New(B, 8*8*4)
		randFill(r, dy, 1)
		step := func() { c.Forward(x); c.Backward(dy); c.InputGrad(dy) }
		step()
		got = append(got, testing.AllocsPerRun(5, step))
	}
	if got[0] != got[1] || got[0] > 9 {
		t.Fatalf("%v allocations per forward+backward+input-gradient at batch 4 and 32; want the same, at most 9", got)
	}
}

// TestConv2DIsDeterministic runs the same step twice on fresh layers and
// compares the bits: the two workers' split and summation order are fixed.
func TestConv2DIsDeterministic(t *testing.T) {
	run := func() (y, dW, dx []float32) {
		r := rand.New(rand.NewPCG(9, 1))
		c, x := newCase(r, convCase{B: 7, H: 9, W: 9, Cin: 3, Cout: 5, K: 3, colFloats: 600})
		dy := tensor.New(7, 9*9*5)
		randFill(r, dy, 1)
		y = append(y, c.Forward(x).Data...)
		dx = append(dx, c.Backward(dy).Data...)
		return y, append(dW, c.dW.Data...), dx
	}
	y1, w1, x1 := run()
	for range 3 {
		y2, w2, x2 := run()
		if !slices.Equal(y1, y2) || !slices.Equal(w1, w2) || !slices.Equal(x1, x2) {
			t.Fatal("two identical Conv2D steps differ")
		}
	}
}

// TestConv2DReLUMatchesTheTwoForwards runs a Conv2D and a ReLU forward as
// two calls and as Conv2DReLU, on batches cut into several chunks (with a
// last partial one) and into the two workers' halves, at GOMAXPROCS 1, 2
// and 16: the ReLU's output, and after a backward through both the
// weight, bias and input gradients, must be the same bit for bit.
func TestConv2DReLUMatchesTheTwoForwards(t *testing.T) {
	for _, cc := range []convCase{
		{B: 7, H: 9, W: 9, Cin: 3, Cout: 5, K: 3, colFloats: 600},
		{B: 12, H: 8, W: 6, Cin: 4, Cout: 16, K: 3, colFloats: 2000},
		{B: 1, H: 5, W: 5, Cin: 2, Cout: 8, K: 1},
	} {
		var ref [][]float32
		for run := range 6 {
			procs, fused := []int{1, 1, 2, 2, 16, 16}[run], run%2 == 1
			old := runtime.GOMAXPROCS(procs)
			r := rand.New(rand.NewPCG(11, 2))
			c, x := newCase(r, cc)
			dy := tensor.New(cc.B, cc.H*cc.W*cc.Cout)
			randFill(r, dy, 1)
			var relu ReLU
			var y *tensor.Matrix
			if fused {
				y = Conv2DReLU(c, &relu, x)
			} else {
				y = relu.Forward(c.Forward(x))
			}
			got := [][]float32{slices.Clone(y.Data)}
			dx := c.Backward(relu.Backward(dy))
			got = append(got, slices.Clone(dx.Data), slices.Clone(c.dW.Data), slices.Clone(c.dB.Data))
			runtime.GOMAXPROCS(old)
			if y != relu.Output() {
				t.Fatalf("%+v: the fused forward returned another matrix than the ReLU's output", cc)
			}
			if ref == nil {
				ref = got
				continue
			}
			sameBits(t, fmt.Sprintf("%+v, GOMAXPROCS %d, fused %v", cc, procs, fused), got, ref)
		}
	}
}

func TestConv2DShapePanics(t *testing.T) {
	c := NewConv2D(4, 4, 2, 3, 3, rand.New(rand.NewPCG(7, 1)))
	for name, f := range map[string]func(){
		"wrong input width": func() { c.Forward(tensor.New(2, 31)) },
		"backward before forward": func() {
			NewConv2D(4, 4, 2, 3, 3, rand.New(rand.NewPCG(7, 2))).Backward(tensor.New(2, 48))
		},
		"wrong gradient rows": func() { c.Forward(tensor.New(2, 32)); c.Backward(tensor.New(3, 48)) },
		"zero kernel":         func() { NewConv2D(4, 4, 2, 3, 0, rand.New(rand.NewPCG(7, 3))) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// naivePool is 2×2/2 max pooling by the definition.
func naivePool(x *tensor.Matrix, H, W, C int) []float32 {
	oh, ow := H/2, W/2
	out := make([]float32, x.Rows*oh*ow*C)
	for b := range x.Rows {
		for r := range oh {
			for q := range ow {
				for ch := range C {
					m := float32(math.Inf(-1))
					for i := range 2 {
						for j := range 2 {
							m = max(m, x.At(b, ((2*r+i)*W+2*q+j)*C+ch))
						}
					}
					out[((b*oh+r)*ow+q)*C+ch] = m
				}
			}
		}
	}
	return out
}

// distinctInput fills x with a random permutation of well-separated
// values, so that no pooling window has a tie and a perturbation of
// ±1e-2·max(1,|v|) never changes which element is the maximum.
func distinctInput(r *rand.Rand, x *tensor.Matrix) {
	for k, p := range r.Perm(len(x.Data)) {
		x.Data[k] = float32(p)*0.25 - float32(len(x.Data))*0.125
	}
}

func TestMaxPool2D(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	for _, tc := range []struct{ B, H, W, C int }{
		{2, 4, 4, 3}, {3, 5, 7, 2}, {1, 2, 2, 1}, {2, 3, 2, 4}, {2, 6, 5, 1},
	} {
		t.Run(fmt.Sprintf("%dx%dx%dx%d", tc.B, tc.H, tc.W, tc.C), func(t *testing.T) {
			p := NewMaxPool2D(tc.H, tc.W, tc.C)
			if p.Out() != (tc.H/2)*(tc.W/2)*tc.C {
				t.Fatalf("Out() = %d, want %d", p.Out(), (tc.H/2)*(tc.W/2)*tc.C)
			}
			x := tensor.New(tc.B, tc.H*tc.W*tc.C)
			distinctInput(r, x)
			y := p.Forward(x)
			want := naivePool(x, tc.H, tc.W, tc.C)
			for k := range want {
				if y.Data[k] != want[k] {
					t.Fatalf("y[%d] = %v, want %v", k, y.Data[k], want[k])
				}
			}
			P := gradcheck.Projection(r, y.Rows, y.Cols)
			dx := p.Backward(P).Clone()
			aud := p.InputGrad(P).Clone()
			loss := func() float64 { return gradcheck.Project(P, p.Forward(x)) }
			for name, g := range map[string]*tensor.Matrix{"x": dx, "x (InputGrad)": aud} {
				if err := gradcheck.Check(name, loss, x.Data, g.Data, nil, 1e-2, gradcheck.Default); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestMaxPool2DTiesGoToFirst(t *testing.T) {
	p := NewMaxPool2D(2, 2, 1)
	x := tensor.FromSlice(1, 4, []float32{1, 3, 3, 2})
	p.Forward(x)
	dx := p.Backward(tensor.FromSlice(1, 1, []float32{5}))
	if want := []float32{0, 5, 0, 0}; !close(dx.Data, want, 0) {
		t.Fatalf("dx = %v, want %v", dx.Data, want)
	}
}

func TestMaxPool2DNoAllocsAfterWarmup(t *testing.T) {
	p := NewMaxPool2D(8, 8, 4)
	x := tensor.New(3, 256)
	distinctInput(rand.New(rand.NewPCG(9, 1)), x)
	dy := tensor.New(3, 64)
	step := func() { p.Forward(x); p.Backward(dy) }
	step()
	if a := testing.AllocsPerRun(5, step); a != 0 {
		t.Fatalf("%v allocations per forward+backward after warm-up", a)
	}
}

func TestFlattenIsIdentity(t *testing.T) {
	f := &Flatten{H: 2, W: 3, C: 2}
	x := tensor.New(4, 12)
	if f.Forward(x) != x || f.Backward(x) != x || f.InputGrad(x) != x {
		t.Fatal("Flatten copied its input or gradient")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a 13-column input to a 12-wide Flatten")
		}
	}()
	f.Forward(tensor.New(1, 13))
}

// BenchmarkConv2D64 is one forward and backward of a 42×42, 64→64 channel
// 3×3 convolution on 16 images (block 2 of the ISIC model, batch 16).
func BenchmarkConv2D64(b *testing.B) {
	r := rand.New(rand.NewPCG(10, 1))
	c, x := newCase(r, convCase{B: 16, H: 42, W: 42, Cin: 64, Cout: 64, K: 3})
	dy := tensor.New(16, c.Out())
	randFill(r, dy, 1)
	c.Forward(x)
	c.Backward(dy)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Forward(x)
		c.Backward(dy)
	}
	flop := 3 * 2 * float64(16*42*42) * float64(9*64) * 64
	b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestMaxPool2DBackwardReLUMatchesTheTwoPasses compares the fused pass
// with ReLU.Backward(MaxPool2D.Backward(dy)) bit for bit: inputs with
// negatives, zeros and ties (so the ReLU's output has +0 maxima), routed
// gradients of both signs and −0, odd image sides (inputs no window
// reads), on one core and cut over four.
func TestMaxPool2DBackwardReLUMatchesTheTwoPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 2))
	for _, tc := range []struct{ B, H, W, C, procs int }{
		{3, 5, 7, 2, 1}, {2, 4, 4, 3, 4}, {40, 16, 16, 8, 1}, {40, 16, 16, 8, 4}, {9, 9, 11, 8, 4},
	} {
		old := runtime.GOMAXPROCS(tc.procs)
		x := tensor.New(tc.B, tc.H*tc.W*tc.C)
		for i := range x.Data {
			x.Data[i] = float32(r.IntN(7) - 4) // many negatives, zeros and ties
		}
		ref, fused := &ReLU{}, &ReLU{}
		pr, pf := NewMaxPool2D(tc.H, tc.W, tc.C), NewMaxPool2D(tc.H, tc.W, tc.C)
		pr.Forward(ref.Forward(x))
		pf.Forward(fused.Forward(x))
		dy := tensor.New(tc.B, pr.Out())
		for i := range dy.Data {
			dy.Data[i] = float32(r.NormFloat64())
			if i%5 == 0 {
				dy.Data[i] = float32(math.Copysign(0, -1))
			}
		}
		want := ref.Backward(pr.Backward(dy))
		// Stale values in the fused output's storage must not survive.
		fused.dx.Resize(tc.B, pf.In())
		for i := range fused.dx.Data {
			fused.dx.Data[i] = 7
		}
		got := MaxPool2DBackwardReLU(pf, fused, dy)
		runtime.GOMAXPROCS(old)
		if got != &fused.dx || got.Rows != want.Rows || got.Cols != want.Cols {
			t.Fatalf("%+v: got a %d×%d matrix, want %d×%d in the ReLU's gradient", tc, got.Rows, got.Cols, want.Rows, want.Cols)
		}
		for i := range want.Data {
			if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("%+v: element %d is %v (bits %#x), the two passes give %v (%#x)", tc, i, got.Data[i], math.Float32bits(got.Data[i]), want.Data[i], math.Float32bits(want.Data[i]))
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a pool whose input was not the ReLU's output")
		}
	}()
	p, relu := NewMaxPool2D(4, 4, 1), &ReLU{}
	x := tensor.New(1, 16)
	relu.Forward(x)
	p.Forward(x)
	MaxPool2DBackwardReLU(p, relu, tensor.New(1, 4))
}
