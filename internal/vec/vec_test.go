package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// specials are the values the loops must treat exactly as their Go
// loops do.
var specials = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
	float32(math.NaN()), math.Float32frombits(0xffc00000), // NaN with the sign bit
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
}

// fill returns n values, mostly normal numbers of both signs, with a
// special value every few elements when withSpecials is set.
func fill(r *rand.Rand, n int, withSpecials bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp(4*r.NormFloat64()))
		if withSpecials && r.IntN(7) == 0 {
			x[i] = specials[r.IntN(len(specials))]
		}
	}
	return x
}

// modes runs f with the assembly loops on (where the CPU has them) and
// off, naming each.
func modes(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, on := range []bool{true, false} {
		name := "go"
		if on {
			if !hasAVX2 {
				t.Log("no AVX2 on this CPU: the assembly loops are not tested here")
				continue
			}
			name = "avx2"
		}
		restore := SetAccel(on)
		t.Run(name, f)
		restore()
	}
}

func sameBits(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func TestFirstNonFinite(t *testing.T) {
	modes(t, func(t *testing.T) {
		for n := 0; n <= 140; n++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i) - 3.5
			}
			if got := FirstNonFinite(x); got != -1 {
				t.Fatalf("n=%d all finite: got %d", n, got)
			}
			for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7f800001)} {
				for _, at := range []int{0, n / 3, n - 1} {
					if n == 0 {
						continue
					}
					y := append([]float32(nil), x...)
					y[at] = bad
					if at+1 < n {
						y[n-1] = bad // a later one must not be reported
					}
					if got := FirstNonFinite(y); got != at {
						t.Fatalf("n=%d, %v at %d: got %d", n, bad, at, got)
					}
				}
			}
		}
		// The largest finite values and subnormals are finite.
		x := []float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0, 1, 2, 3, 4, 5}
		if got := FirstNonFinite(x); got != -1 {
			t.Fatalf("extreme finite values: got %d", got)
		}
	})
}

// TestReluMatchesDefinition checks Relu against max(x, 0) on ordinary
// values and against the sign-bit rule on the special ones, and the
// assembly against the Go loop bit for bit.
func TestRelu(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 200; n += 1 + n/16 {
		x := fill(r, n, true)
		want := make([]float32, n)
		for i, v := range x {
			switch {
			case math.Signbit(float64(v)):
				want[i] = 0
			default:
				want[i] = v
			}
		}
		modes(t, func(t *testing.T) {
			y := make([]float32, n+3)
			Relu(y, x)
			if i := sameBits(y[:n], want); i >= 0 {
				t.Fatalf("n=%d: y[%d] = %v for x = %v, want %v", n, i, y[i], x[i], want[i])
			}
			if y[n] != 0 || y[n+1] != 0 {
				t.Fatalf("n=%d: wrote past len(x)", n)
			}
		})
	}
}

func TestReluGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 200; n += 1 + n/16 {
		x := fill(r, n, true)
		y := make([]float32, n)
		restore := SetAccel(false)
		Relu(y, x)
		restore()
		dy := fill(r, n, true)
		want := make([]float32, n)
		for i := range dy {
			if y[i] > 0 || math.IsNaN(float64(y[i])) {
				want[i] = dy[i]
			}
		}
		modes(t, func(t *testing.T) {
			dx := make([]float32, n)
			for i := range dx {
				dx[i] = 42
			}
			ReluGrad(dx, dy, y)
			if i := sameBits(dx, want); i >= 0 {
				t.Fatalf("n=%d: dx[%d] = %v for y = %v, dy = %v; want %v", n, i, dx[i], y[i], dy[i], want[i])
			}
		})
	}
}

func TestColSums(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct{ rows, cols, stride int }{
		{0, 5, 5}, {1, 1, 1}, {3, 7, 7}, {5, 8, 8}, {4, 9, 11}, {17, 64, 64}, {2, 65, 70},
		{1024, 128, 128}, {33, 130, 131}, {7, 200, 256}, {3, 72, 72},
	} {
		m := fill(r, max(tc.rows*tc.stride, 1), false)
		// The reference: each column summed over the rows in order, in
		// float32, one column at a time.
		want := make([]float32, tc.cols)
		for j := range want {
			var s float32
			for i := range tc.rows {
				s += m[i*tc.stride+j]
			}
			want[j] = s
		}
		modes(t, func(t *testing.T) {
			dst := make([]float32, tc.cols)
			for i := range dst {
				dst[i] = 99 // cleared first
			}
			ColSums(dst, m, tc.rows, tc.stride)
			if i := sameBits(dst, want); i >= 0 {
				t.Fatalf("%+v: column %d sums to %v, want %v", tc, i, dst[i], want[i])
			}
		})
	}
}

func TestColSumsRefusesShortMatrix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a matrix shorter than rows×stride was accepted")
		}
	}()
	ColSums(make([]float32, 4), make([]float32, 7), 2, 4)
}

// TestAdam checks the update against Adam computed in float64 (close) and
// the assembly against the Go loop (bit for bit), including zero
// gradients, huge ones and a NaN.
func TestAdam(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const b1, b2, eps, step, vScale = 0.9, 0.999, 1e-8, 1e-3 / (1 - 0.9), 1 / 0.0316227766
	for n := 0; n <= 100; n += 1 + n/8 {
		w0, g := fill(r, n, false), fill(r, n, false)
		m0, v0 := fill(r, n, false), fill(r, n, false)
		for i := range v0 {
			v0[i] = float32(math.Abs(float64(v0[i])))
			if i%5 == 0 {
				g[i] = 0
			}
		}
		if n > 3 {
			g[3] = float32(math.NaN())
		}
		var bits [2][4][]float32
		for k, on := range []bool{false, true} {
			if on && !hasAVX2 {
				bits[1] = bits[0]
				continue
			}
			w, m, v := append([]float32(nil), w0...), append([]float32(nil), m0...), append([]float32(nil), v0...)
			restore := SetAccel(on)
			Adam(w, g, m, v, b1, b2, eps, step, vScale)
			restore()
			bits[k] = [4][]float32{w, m, v, g}
		}
		for part, name := range []string{"w", "m", "v"} {
			if i := sameBits(bits[0][part], bits[1][part]); i >= 0 {
				t.Fatalf("n=%d: %s[%d] is %v by assembly, %v by the Go loop", n, name, i, bits[1][part][i], bits[0][part][i])
			}
		}
		for i := range n {
			if math.IsNaN(float64(g[i])) {
				if !math.IsNaN(float64(bits[0][0][i])) {
					t.Fatalf("n=%d: a NaN gradient left w[%d] = %v", n, i, bits[0][0][i])
				}
				continue
			}
			gm := 0.9*float64(m0[i]) + 0.1*float64(g[i])
			gv := 0.999*float64(v0[i]) + 0.001*float64(g[i])*float64(g[i])
			want := float64(w0[i]) - step*gm/(math.Sqrt(gv)*vScale+eps)
			if got := float64(bits[0][0][i]); math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
				t.Fatalf("n=%d: w[%d] = %v, Adam in float64 gives %v", n, i, got, want)
			}
		}
	}
}

func BenchmarkLoops(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	x, y := fill(r, 1024*128, false), make([]float32, 1024*128)
	w, g, m, v := fill(r, 128*128, false), fill(r, 128*128, false), make([]float32, 128*128), make([]float32, 128*128)
	dst := make([]float32, 128)
	for _, on := range []bool{true, false} {
		name := "go"
		if on {
			name = "avx2"
		}
		restore := SetAccel(on)
		b.Run("FirstNonFinite-1024x128/"+name, func(b *testing.B) {
			for b.Loop() {
				FirstNonFinite(x)
			}
		})
		b.Run("Relu-1024x128/"+name, func(b *testing.B) {
			for b.Loop() {
				Relu(y, x)
			}
		})
		b.Run("ReluGrad-1024x128/"+name, func(b *testing.B) {
			for b.Loop() {
				ReluGrad(y, x, x)
			}
		})
		b.Run("ColSums-1024x128/"+name, func(b *testing.B) {
			for b.Loop() {
				ColSums(dst, x, 1024, 128)
			}
		})
		b.Run("Adam-128x128/"+name, func(b *testing.B) {
			for b.Loop() {
				Adam(w, g, m, v, 0.9, 0.999, 1e-8, 1e-3, 1)
			}
		})
		restore()
	}
}

// adamTable returns a table of n rows (stride floats each: d weights, d
// first moments, d second moments, which are non-negative, and padding),
// listed rows drawn from it (repeats possible) and their gradients, d
// floats each.
func adamTable(r *rand.Rand, d, stride, n, listed int, specials bool) (store []float32, rows []int32, grad []float32) {
	store = fill(r, n*stride, specials)
	for i := range store {
		if i%stride >= 2*d && i%stride < 3*d {
			store[i] = float32(math.Abs(float64(store[i]))) // second moments
		}
	}
	rows = make([]int32, listed)
	for i := range rows {
		rows[i] = int32(r.IntN(n))
	}
	return store, rows, fill(r, listed*d, specials)
}

// TestAdamRows checks the row-wise update against Adam applied row by row
// to copies of the rows, on widths with and without a 4-lane loop, rows
// listed out of order and twice, and leaves every float outside the listed
// rows' weights and moments untouched.
func TestAdamRows(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ d, stride, rows, listed int }{
		{4, 16, 50, 30}, {1, 4, 20, 9}, {2, 8, 20, 9}, {8, 32, 40, 40}, {12, 48, 10, 3}, {4, 13, 9, 20}, {3, 9, 7, 7},
	} {
		store0, rows, grad := adamTable(r, tc.d, tc.stride, tc.rows, tc.listed, false)
		want := append([]float32(nil), store0...)
		restore := SetAccel(false)
		for s, row := range rows {
			o := int(row) * tc.stride
			Adam(want[o:o+tc.d], grad[s*tc.d:(s+1)*tc.d], want[o+tc.d:o+2*tc.d], want[o+2*tc.d:o+3*tc.d], 0.9, 0.999, 1e-8, 0.01, 3)
		}
		restore()
		modes(t, func(t *testing.T) {
			got := append([]float32(nil), store0...)
			AdamRows(got, tc.stride, rows, grad, tc.d, 0.9, 0.999, 1e-8, 0.01, 3)
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("%+v: store[%d] (row %d, slot %d) = %v, want %v", tc, i, i/tc.stride, i%tc.stride, got[i], want[i])
			}
		})
	}
}

// TestAdamRowsL2 checks the fused pass against its two passes done
// separately, written out here: each listed row's gradient plus l2 times
// its current weights (the product rounded to float32, then the sum), then
// Adam on that row, in list order (a row listed twice sees its first
// update). Both the store and the gradients left in grad must agree bit
// for bit, with and without special values, at l2 of both signs; a NaN
// may differ from the reference's NaN in its payload (where both of an
// operation's operands are NaNs the one passed on is the operand order's,
// which the compiler chooses; a run's gradients and weights are finite).
func TestAdamRowsL2(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		d, stride, rows, listed int
		l2                      float32
		specials                bool
	}{
		{4, 16, 50, 30, 2e-4, false}, {1, 4, 20, 9, 0.5, false}, {2, 8, 20, 9, -3, true}, {8, 32, 40, 40, 1e-6, true},
		{12, 48, 10, 3, 2e-5, false}, {4, 13, 9, 20, 0.25, true}, {3, 9, 7, 7, 7, false}, {16, 52, 30, 25, 2e-5, true},
	} {
		store0, rows, grad0 := adamTable(r, tc.d, tc.stride, tc.rows, tc.listed, tc.specials)
		want := append([]float32(nil), store0...)
		wantGrad := append([]float32(nil), grad0...)
		restore := SetAccel(false)
		for s, row := range rows {
			o := int(row) * tc.stride
			g := wantGrad[s*tc.d : (s+1)*tc.d]
			for k := range g {
				p := float32(tc.l2 * want[o+k])
				g[k] = g[k] + p
			}
			Adam(want[o:o+tc.d], g, want[o+tc.d:o+2*tc.d], want[o+2*tc.d:o+3*tc.d], 0.9, 0.999, 1e-8, 0.01, 3)
		}
		restore()
		modes(t, func(t *testing.T) {
			got := append([]float32(nil), store0...)
			grad := append([]float32(nil), grad0...)
			AdamRowsL2(got, tc.stride, rows, grad, tc.d, tc.l2, 0.9, 0.999, 1e-8, 0.01, 3)
			if i := sameBitsOrNaNs(got, want); i >= 0 {
				t.Fatalf("%+v: store[%d] (row %d, slot %d) = %v, want %v", tc, i, i/tc.stride, i%tc.stride, got[i], want[i])
			}
			if i := sameBitsOrNaNs(grad, wantGrad); i >= 0 {
				t.Fatalf("%+v: grad[%d] = %v, want %v", tc, i, grad[i], wantGrad[i])
			}
		})
	}
}

// sameBitsOrNaNs is sameBits with any two NaNs taken as the same.
func sameBitsOrNaNs(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

func TestAdamRowsRefusesRowOutsideTable(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a row past the table was accepted")
		}
	}()
	AdamRows(make([]float32, 3*16), 16, []int32{3}, make([]float32, 4), 4, 0.9, 0.999, 1e-8, 1, 1)
}

// TestAdd checks dst += src against the sum of each pair, on every
// length around the vector widths, leaving dst past len(src) alone.
func TestAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := 0; n <= 140; n++ {
		dst0, src := fill(r, n+5, true), fill(r, n, true)
		want := append([]float32(nil), dst0...)
		for i := range src {
			want[i] = dst0[i] + src[i]
		}
		modes(t, func(t *testing.T) {
			dst := append([]float32(nil), dst0...)
			Add(dst, src)
			// Two NaNs may carry either payload (the hardware returns
			// the first operand's, and the compiler may swap them).
			for i := range dst {
				if math.IsNaN(float64(dst[i])) && math.IsNaN(float64(want[i])) {
					dst[i] = want[i]
				}
			}
			if i := sameBits(dst, want); i >= 0 {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want[i])
			}
		})
	}
}

// TestMaxPool2x2Row checks the assembly against the Go loop (values and
// indices), and both against the rule on hand-made windows: ties keep the
// first input, a NaN is kept only in the first place.
func TestMaxPool2x2Row(t *testing.T) {
	nan := float32(math.NaN())
	// One window, c = 8: each channel a different case.
	//            ch0 ch1 ch2 ch3 ch4 ch5 ch6 ch7
	tl := []float32{1, 5, 2, 2, nan, 0, 3, -1}
	tr := []float32{2, 4, 2, 7, 9, nan, 3, -2}
	bl := []float32{3, 3, 2, 7, 1, 1, nan, -3}
	br := []float32{4, 2, 2, 1, 9, 1, 4, -1}
	x := append(append(append(append([]float32(nil), tl...), tr...), bl...), br...)
	wantY := []float32{4, 5, 2, 7, nan, 1, 4, -1}
	wantArg := []int32{24, 1, 2, 11, 4, 21, 30, 7}
	modes(t, func(t *testing.T) {
		y, arg := make([]float32, 8), make([]int32, 8)
		MaxPool2x2Row(y, arg, x, 0, 16, 8, 1)
		for ch := range 8 {
			same := y[ch] == wantY[ch] || math.IsNaN(float64(y[ch])) && math.IsNaN(float64(wantY[ch]))
			if !same || arg[ch] != wantArg[ch] {
				t.Fatalf("channel %d: max %v at %d, want %v at %d", ch, y[ch], arg[ch], wantY[ch], wantArg[ch])
			}
		}
	})
	r := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct{ w, c, rows int }{{4, 8, 4}, {6, 16, 2}, {84, 64, 4}, {5, 8, 4}, {6, 3, 2}} {
		x := fill(r, tc.w*tc.c*tc.rows+3, true)
		for i := range x {
			if i%5 == 0 {
				x[i] = float32(r.IntN(3)) // ties
			}
		}
		ow := tc.w / 2
		var ys [2][]float32
		var args [2][]int32
		for k, on := range []bool{false, true} {
			if on && !hasAVX2 {
				ys[1], args[1] = ys[0], args[0]
				continue
			}
			restore := SetAccel(on)
			ys[k], args[k] = make([]float32, ow*tc.c*(tc.rows/2)), make([]int32, ow*tc.c*(tc.rows/2))
			for r := range tc.rows / 2 {
				MaxPool2x2Row(ys[k][r*ow*tc.c:], args[k][r*ow*tc.c:], x, 2*r*tc.w*tc.c, tc.w*tc.c, tc.c, ow)
			}
			restore()
		}
		if i := sameBits(ys[0], ys[1]); i >= 0 {
			t.Fatalf("%+v: y[%d] %v by assembly, %v by the Go loop", tc, i, ys[1][i], ys[0][i])
		}
		for i := range args[0] {
			if args[0][i] != args[1][i] {
				t.Fatalf("%+v: arg[%d] %d by assembly, %d by the Go loop", tc, i, args[1][i], args[0][i])
			}
			if x[args[0][i]] != ys[0][i] && !math.IsNaN(float64(ys[0][i])) {
				t.Fatalf("%+v: arg[%d] = %d points at %v, not the max %v", tc, i, args[0][i], x[args[0][i]], ys[0][i])
			}
		}
	}
}

// TestSumSquares: each row's sum of squares equals, bit for bit, a float64
// loop over the row in column order — on row counts around the eight
// rows the assembly takes at once, column counts around its four, wider
// strides, values spread over many magnitudes (another order of additions
// would round differently) and NaN, ±Inf, ±0 and subnormals — and a hand
// case.
func TestSumSquares(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ rows, cols, stride int }{
		{0, 4, 4}, {1, 0, 0}, {1, 3, 3}, {8, 4, 4}, {8, 5, 5}, {9, 7, 9}, {7, 8, 8},
		{16, 12, 13}, {17, 128, 128}, {24, 131, 136}, {1024, 128, 128}, {15, 2, 2}, {40, 64, 64},
	} {
		for _, specials := range []bool{false, true} {
			m := fill(r, max((tc.rows-1)*tc.stride+tc.cols, 1), specials)
			want := make([]float64, tc.rows)
			for i := range want {
				var s float64
				for k := range tc.cols {
					v := float64(m[i*tc.stride+k])
					s += v * v
				}
				want[i] = s
			}
			modes(t, func(t *testing.T) {
				dst := make([]float64, tc.rows)
				for i := range dst {
					dst[i] = 99 // overwritten
				}
				SumSquares(dst, m, tc.cols, tc.stride)
				for i := range dst {
					if math.Float64bits(dst[i]) != math.Float64bits(want[i]) && !(math.IsNaN(dst[i]) && math.IsNaN(want[i])) {
						t.Fatalf("%+v specials %v: row %d sums to %v, want %v", tc, specials, i, dst[i], want[i])
					}
				}
			})
		}
	}
	m := []float32{3, 4, 0, 0, 1, 2, 2, 4, -5, 12, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0, 0, 0, 1, -1, 1, -1, 8, 0, 0, -15, 9, 9, 9, 9}
	want := []float64{25, 25, 169, 4, 0, 4, 4, 289, 324}
	modes(t, func(t *testing.T) {
		dst := make([]float64, 9)
		SumSquares(dst, m, 4, 4)
		for i := range dst {
			if dst[i] != want[i] {
				t.Errorf("row %d: %v, want %v", i, dst[i], want[i])
			}
		}
	})
}

func TestSumSquaresRefusesShortMatrix(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a matrix shorter than its rows was accepted")
		}
	}()
	SumSquares(make([]float64, 3), make([]float32, 9), 4, 4)
}
