// Package vec holds the element-wise float32 loops of the training step
// that run on every activation and weight: the finiteness check, ReLU and
// its gradient, column sums and the Adam update. On amd64 CPUs with AVX2
// they run as Go assembly over eight lanes at a time; elsewhere, and for
// the few elements past the last full vector, as plain Go loops. Every
// assembly loop performs, per element, exactly the IEEE single-precision
// operations of its Go loop in the same order (no fused multiply-add), so
// both give bit-identical results; the tests check that on every length
// and on NaN, ±Inf, ±0 and subnormal inputs.
package vec

import "math"

// accel says whether the assembly loops run (the CPU has AVX2); tests
// switch it off with SetAccel to run the Go loops.
var accel = hasAVX2

// Accelerated reports whether the assembly loops run on this CPU.
func Accelerated() bool { return accel }

// SetAccel switches the assembly loops on or off (on only where the CPU
// can run them) and returns a function that restores the previous
// setting. It is a test hook: it must not be called while other
// goroutines use the package.
func SetAccel(on bool) (restore func()) {
	prev := accel
	accel = on && hasAVX2
	return func() { accel = prev }
}

// FirstNonFinite returns the index of the first NaN or ±Inf in x, or -1
// when every value is finite.
func FirstNonFinite(x []float32) int {
	n := 0
	if accel && len(x) >= lanes {
		n = len(x) &^ (lanes - 1)
		if !anyNonFiniteAsm(&x[0], n) {
			x = x[n:]
		} else {
			n = 0
		}
	}
	for k, v := range x {
		// v-v is NaN exactly when v is NaN or ±Inf.
		if v-v != 0 {
			return n + k
		}
	}
	return -1
}

// Relu sets y[i] = max(x[i], 0) for every i < len(x), bit for bit as
// clearing every value whose sign bit is set: negative numbers, −0 and
// NaNs with the sign bit become +0. len(y) must be at least len(x).
func Relu(y, x []float32) {
	y = y[:len(x)]
	if accel && len(x) >= lanes {
		n := len(x) &^ (lanes - 1)
		reluAsm(&y[0], &x[0], n)
		y, x = y[n:], x[n:]
	}
	for i, v := range x {
		b := math.Float32bits(v)
		y[i] = math.Float32frombits(b &^ uint32(int32(b)>>31))
	}
}

// ReluGrad sets dx[i] = dy[i] where y[i] > 0 and 0 elsewhere, for every
// i < len(dy), where y is the output of Relu: its bits read as a
// non-negative int32 that is 0 exactly when y is +0. dx and y must be at
// least as long as dy.
func ReluGrad(dx, dy, y []float32) {
	dx, y = dx[:len(dy)], y[:len(dy)]
	if accel && len(dy) >= lanes {
		n := len(dy) &^ (lanes - 1)
		reluGradAsm(&dx[0], &dy[0], &y[0], n)
		dx, dy, y = dx[n:], dy[n:], y[n:]
	}
	for i, g := range dy {
		m := uint32(-int32(math.Float32bits(y[i])) >> 31)
		dx[i] = math.Float32frombits(math.Float32bits(g) & m)
	}
}

// ColSums sets dst[j] = Σ_i m[i·stride + j] over rows i = 0 … rows−1, for
// j < len(dst), adding the rows in order from 0 (so each column's sum is
// the one a loop over the rows gives). m holds rows rows of stride ≥
// len(dst) floats (the last row may end at len(dst)).
func ColSums(dst, m []float32, rows, stride int) {
	clear(dst)
	if rows <= 0 || len(dst) == 0 {
		return
	}
	if stride < len(dst) || len(m) < (rows-1)*stride+len(dst) {
		panic("vec: ColSums given a matrix smaller than its shape")
	}
	j := 0
	if accel {
		for ; j+wideCols <= len(dst); j += wideCols {
			sumRows64Asm(&dst[j], &m[j], rows, stride)
		}
		for ; j+lanes <= len(dst); j += lanes {
			sumRows8Asm(&dst[j], &m[j], rows, stride)
		}
	}
	if j == len(dst) {
		return
	}
	tail := dst[j:]
	for i := range rows {
		r := m[i*stride+j : i*stride+len(dst)]
		for k, v := range r {
			tail[k] += v
		}
	}
}

// SumSquares sets dst[i] = Σ_k float64(m[i·stride + k])² over the cols
// columns k of each of the rows rows i = 0 … len(dst)−1, adding each row's
// squares one by one in column order in float64 (so each sum is the one
// a loop over the row gives, bit for bit). m holds len(dst) rows of
// stride ≥ cols floats (the last row may end at cols).
func SumSquares(dst []float64, m []float32, cols, stride int) {
	rows := len(dst)
	if rows == 0 {
		return
	}
	if cols < 0 || stride < cols || len(m) < (rows-1)*stride+cols {
		panic("vec: SumSquares given a matrix smaller than its shape")
	}
	i, k0 := 0, 0
	if accel && cols >= 4 {
		k0 = cols &^ 3
		for ; i+8 <= rows; i += 8 {
			sumSquares8Asm(&dst[i], &m[i*stride], stride, k0)
		}
	}
	for r := range dst {
		if r >= i {
			dst[r] = 0
		}
		k := k0
		if r >= i {
			k = 0
		}
		s := dst[r]
		for _, v := range m[r*stride+k : r*stride+cols] {
			s += float64(v) * float64(v)
		}
		dst[r] = s
	}
}

// Adam applies one Adam step to the weights w from the gradient g and the
// moments m and v (updated in place), with c₁ = 1−β₁ and c₂ = 1−β₂:
//
//	m ← β₁·m + c₁·g
//	v ← β₂·v + (c₂·g)·g
//	w ← w − (step·m) / (√v·vScale + eps)
//
// every operation rounded to float32 in that order (the square root is
// correctly rounded, which is what rounding a float64 root gives). g, m
// and v must be at least as long as w.
func Adam(w, g, m, v []float32, b1, b2, eps, step, vScale float32) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	c1, c2 := 1-b1, 1-b2
	if accel && len(w) >= lanes {
		n := len(w) &^ (lanes - 1)
		adamAsm(&w[0], &g[0], &m[0], &v[0], n, &adamConsts{b1, c1, b2, c2, eps, step, vScale, 0})
		w, g, m, v = w[n:], g[n:], m[n:], v[n:]
	}
	for j, gj := range g {
		// The conversions round each product to float32, so no
		// compiler fuses them into a multiply-add (GOAMD64=v3 would).
		mj := float32(b1*m[j]) + float32(c1*gj)
		vj := float32(b2*v[j]) + float32(float32(c2*gj)*gj)
		m[j], v[j] = mj, vj
		w[j] -= float32(step*mj) / (float32(float32(math.Sqrt(float64(vj)))*vScale) + eps)
	}
}

// adamConsts are Adam's scalars as the assembly loop reads them.
type adamConsts struct {
	b1, c1, b2, c2, eps, step, vScale float32
	l2                                float32 // AdamRowsL2's factor of the weights added to the gradient
}

// lanes is the floats in one AVX2 register; wideCols the columns one
// pass of the column-sum loop keeps in eight registers.
const (
	lanes    = 8
	wideCols = 64
)

// AdamRows applies Adam (as [Adam]) to the rows of a table laid out
// row-major with stride floats per row, each row holding its d weights,
// then their d first moments, then their d second moments. rows lists the
// rows to update; grad holds their gradients, d floats per listed row in
// the same order. Rows listed twice are updated twice.
func AdamRows(store []float32, stride int, rows []int32, grad []float32, d int, b1, b2, eps, step, vScale float32) {
	adamRows("AdamRows", store, stride, rows, grad, d, false, &adamConsts{b1, 1 - b1, b2, 1 - b2, eps, step, vScale, 0})
}

// AdamRowsL2 is AdamRows on the gradients grad + l2·w, w each listed
// row's weights before the update: every gradient float first becomes
// g + l2·w (the product rounded to float32, then the sum), which is
// written back into grad, and then takes part in the update as in
// AdamRows. It is the one pass over the rows that an L2 term's pass
// (adding l2·w to the gradient) followed by AdamRows would make in two,
// with the same results bit for bit.
func AdamRowsL2(store []float32, stride int, rows []int32, grad []float32, d int, l2, b1, b2, eps, step, vScale float32) {
	adamRows("AdamRowsL2", store, stride, rows, grad, d, true, &adamConsts{b1, 1 - b1, b2, 1 - b2, eps, step, vScale, l2})
}

// adamRows is AdamRows with c's scalars, with the L2 term (factor c.l2)
// first where withL2 (AdamRowsL2); name is the caller's, for its panics.
func adamRows(name string, store []float32, stride int, rows []int32, grad []float32, d int, withL2 bool, c *adamConsts) {
	if len(rows) == 0 {
		return
	}
	if d <= 0 || stride < 3*d || len(grad) < len(rows)*d {
		panic("vec: " + name + " given a row width, stride or gradient that do not fit")
	}
	limit := (len(store)-3*d)/stride + 1 // rows whose moments end inside store
	for _, r := range rows {
		if r < 0 || int(r) >= limit {
			panic("vec: " + name + " given a row outside the table")
		}
	}
	if accel {
		on := 0
		if withL2 {
			on = 1
		}
		adamRowsAsm(&store[0], stride, &rows[0], len(rows), &grad[0], d, c, on)
		return
	}
	for s, r := range rows {
		row := store[int(r)*stride : int(r)*stride+3*d]
		g := grad[s*d : (s+1)*d]
		if withL2 {
			for k, w := range row[:d] {
				g[k] += float32(c.l2 * w) // rounded, so that no compiler fuses it
			}
		}
		Adam(row[:d], g, row[d:2*d], row[2*d:], c.b1, c.b2, c.eps, c.step, c.vScale)
	}
}

// PrefetchRows asks the CPU to bring the first cache line of each listed
// row of a table (stride floats per row) into the cache, without waiting
// for it: a pass about to work on rows scattered over a table far larger
// than the caches issues this first, so that their misses overlap. It
// reads nothing and never faults, whatever the rows; where the CPU has no
// AVX2 it does nothing.
func PrefetchRows(store []float32, stride int, rows []int32) {
	if accel && len(rows) > 0 && len(store) > 0 {
		prefetchRowsAsm(&store[0], stride, &rows[0], len(rows))
	}
}

// PrefetchKeys is PrefetchRows for the rows off + key>>32 of keys (an id
// in the high half of each key).
func PrefetchKeys(store []float32, stride int, keys []uint64, off int) {
	if accel && len(keys) > 0 && len(store) > 0 {
		prefetchKeysAsm(&store[0], stride, &keys[0], len(keys), off)
	}
}

// Add sets dst[i] += src[i] for every i < len(src); dst must be at least
// as long.
func Add(dst, src []float32) {
	dst = dst[:len(src)]
	if accel && len(src) >= lanes {
		n := len(src) &^ (lanes - 1)
		addAsm(&dst[0], &src[0], n)
		dst, src = dst[n:], src[n:]
	}
	for i, v := range src {
		dst[i] += v
	}
}

// MaxPool2x2Row is one output row of a 2×2, stride-2 max pool over an
// image stored as rows of w pixels of c channels (wc = w·c floats per
// image row). For each output column q < ow and channel ch < c it looks
// at the four inputs x[k] for k = top + 2q·c + ch, then k + c, then
// k + wc, then k + wc + c, and writes the largest into y[q·c + ch] and its
// index k into arg[q·c + ch]; a later input replaces the one kept only
// when it is greater (so the first wins ties, a NaN is kept only when it
// comes first, and a later NaN never replaces anything).
func MaxPool2x2Row(y []float32, arg []int32, x []float32, top, wc, c, ow int) {
	if ow <= 0 || c <= 0 {
		return
	}
	y, arg = y[:ow*c], arg[:ow*c]
	_ = x[top+wc+2*ow*c-1] // the last input read
	if top < 0 || wc < 2*ow*c {
		panic("vec: MaxPool2x2Row given a row that does not fit its image")
	}
	if accel && c%lanes == 0 && top+wc+2*ow*c <= 1<<31-1 {
		maxPoolRowAsm(&y[0], &arg[0], &x[top], &x[top+wc], ow, c, top, wc)
		return
	}
	for q := range ow {
		o := q * c
		i00 := top + 2*q*c
		i01, i10 := i00+c, i00+wc
		i11 := i10 + c
		for ch := range c {
			best, at := x[i00+ch], i00+ch
			if v := x[i01+ch]; v > best {
				best, at = v, i01+ch
			}
			if v := x[i10+ch]; v > best {
				best, at = v, i10+ch
			}
			if v := x[i11+ch]; v > best {
				best, at = v, i11+ch
			}
			y[o+ch] = best
			arg[o+ch] = int32(at)
		}
	}
}
