// Package wire is the codec of the cut-layer tensors the two parties
// exchange: the encodings of embeddings and gradients on the wire.
//
// An encoding is two separate things. Rounding ([Encoding.Round]) is lossy
// and happens in the parties, before a tensor is sent: the passive rounds
// its embedding, the active its protected gradient, so that everything
// downstream (the active's top model, the audit, the passive's backward
// pass) sees the values that cross the wire, and the in-process and
// two-process runs give the same records. Packing ([Encoding.Pack],
// [Encoding.Unpack]) is lossless on a rounded tensor and happens in the
// transport: it writes the rounded values in fewer bytes, and refuses a
// tensor that is not rounded.
//
// The encodings (docs/METHODS.md, "Wire encodings"):
//
//   - f32: IEEE binary32, 4 bytes per value; rounding is the identity.
//   - f16: IEEE binary16 (round to nearest even, github.com/x448/float16),
//     2 bytes per value; a value beyond ±65504 is an error.
//   - bf16: bfloat16, the upper half of a binary32 (round to nearest
//     even), 2 bytes per value.
//   - int8: per row, a float32 scale s (the smallest float32 with 127·s ≥
//     max|v|) and q = round(v/s) in −127…127 (nearest, ties to even); the
//     value is q·s rounded to float32; 1 byte per value and 4 per row.
//   - int4: as int8 with 7 for 127: per row, the smallest float32 scale s
//     with 7·s ≥ max|v| and q = round(v/s) in −7…7 (nearest, ties to
//     even), packed two values per byte (int4.go); half a byte per value
//     and 4 per row.
package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/x448/float16"

	"github.com/splitguard/splitguard/tensor"
)

// Encoding is how the values of one tensor are represented on the wire.
// The zero value is F32.
type Encoding uint8

// The encodings; their numbers are those of the wire format
// (proto/splitguard.proto, enum Encoding).
const (
	F32  Encoding = 0 // float32, 4 bytes per value
	F16  Encoding = 1 // IEEE float16, 2 bytes per value
	BF16 Encoding = 2 // bfloat16, 2 bytes per value
	Int8 Encoding = 3 // int8 with a float32 scale per row
	Int4 Encoding = 4 // int4 with a float32 scale per row, two values per byte
)

var names = [...]string{F32: "f32", F16: "f16", BF16: "bf16", Int8: "int8", Int4: "int4"}

// Names lists the encodings' names in order.
func Names() []string { return append([]string(nil), names[:]...) }

// String returns the encoding's name (f32, f16, bf16, int8, int4).
func (e Encoding) String() string {
	if e.Valid() {
		return names[e]
	}
	return fmt.Sprintf("encoding(%d)", uint8(e))
}

// Valid reports whether e is one of the defined encodings.
func (e Encoding) Valid() bool { return int(e) < len(names) }

// Parse returns the encoding named s.
func Parse(s string) (Encoding, error) {
	for i, n := range names {
		if s == n {
			return Encoding(i), nil
		}
	}
	return 0, fmt.Errorf("unknown wire encoding %q (want one of %s)", s, strings.Join(names[:], ", "))
}

// Encodings are the encodings of the two directions of a run and the
// compression of both.
type Encodings struct {
	Embedding Encoding // passive → active: cut-layer embeddings
	Gradient  Encoding // active → passive: protected gradients
	// Compression is applied by the transport to the packed training
	// tensors of both directions; it is lossless, so the parties, which
	// round to Embedding and Gradient, do not see it.
	Compression Compression
}

// Size returns the bytes of a packed rows×cols tensor.
func (e Encoding) Size(rows, cols int) int {
	switch e {
	case F16, BF16:
		return 2 * rows * cols
	case Int8:
		return rows * (4 + cols)
	case Int4:
		return rows * (4 + (cols+1)/2)
	}
	return 4 * rows * cols
}

// The largest |q| of the encodings with a scale per row.
const (
	int8Max = 127
	int4Max = 7
)

// qmax is the largest |q| of e's values when e has a scale per row (Int8,
// Int4), else 0.
func (e Encoding) qmax() int8 {
	switch e {
	case Int8:
		return int8Max
	case Int4:
		return int4Max
	}
	return 0
}

// Round rounds m in place to the values e represents (the identity for
// F32). A value e cannot represent finitely (beyond float16's ±65504, or
// bfloat16's range) is an error; m must be finite.
func (e Encoding) Round(m *tensor.Matrix) error {
	switch e {
	case F32:
		return nil
	case F16:
		for i, v := range m.Data {
			h := float16.Fromfloat32(v)
			if !h.IsFinite() {
				return fmt.Errorf("wire: f16: value %g at row %d column %d is beyond float16's range ±65504", v, i/max(m.Cols, 1), i%max(m.Cols, 1))
			}
			m.Data[i] = h.Float32()
		}
	case BF16:
		for i, v := range m.Data {
			r := roundBF16(math.Float32bits(v))
			if r&0x7f80 == 0x7f80 {
				return fmt.Errorf("wire: bf16: value %g at row %d column %d is beyond bfloat16's range", v, i/max(m.Cols, 1), i%max(m.Cols, 1))
			}
			m.Data[i] = math.Float32frombits(uint32(r) << 16)
		}
	case Int8, Int4:
		lim := e.qmax()
		for r := range m.Rows {
			row := m.Data[r*m.Cols : (r+1)*m.Cols]
			big, ok := maxAbs(row)
			if !ok {
				return fmt.Errorf("wire: %v: non-finite value %g in row %d", e, firstNonFinite(row), r)
			}
			s := rowScale(big, lim)
			for i, v := range row {
				row[i] = dequant(quant(v, s, lim), s)
			}
		}
	default:
		return fmt.Errorf("wire: unknown encoding %d", uint8(e))
	}
	return nil
}

// maxAbs returns the largest magnitude in row, and false when some value
// is not finite. It compares the magnitudes' bits as integers (for
// non-negative floats the order is the same), keeping the loop free of
// floating-point max, which must order NaN and ±0.
func maxAbs(row []float32) (float32, bool) {
	var big uint32
	for _, v := range row {
		big = max(big, math.Float32bits(v)&0x7fffffff)
	}
	return math.Float32frombits(big), big < 0x7f800000
}

// firstNonFinite is row's first value that is not finite (0 if none).
func firstNonFinite(row []float32) float32 {
	for _, v := range row {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return v
		}
	}
	return 0
}

// roundBF16 rounds float32 bits to the nearest bfloat16 (ties to even).
func roundBF16(b uint32) uint16 {
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// rowScale returns the scale of a row whose largest magnitude is big, for
// values q in −lim…lim: 0 for a row of zeros, else the smallest float32
// s with lim·s ≥ big (so that no value needs clamping), one step smaller
// where lim·s would overflow float32.
func rowScale(big float32, lim int8) float32 {
	if big == 0 {
		return 0
	}
	l := float64(lim)
	s := float32(float64(big) / l)
	if float64(s)*l < float64(big) {
		s = math.Nextafter32(s, math.MaxFloat32)
	}
	if math.IsInf(float64(dequant(lim, s)), 0) {
		s = math.Nextafter32(s, 0)
	}
	return s
}

// quant returns round(v/s) (ties to even) clamped to −lim…lim; 0 for
// s = 0.
func quant(v, s float32, lim int8) int8 {
	if s == 0 {
		return 0
	}
	q := math.RoundToEven(float64(v) / float64(s))
	l := float64(lim)
	return int8(max(-l, min(l, q)))
}

// dequant returns q·s rounded once to float32. A float32 product is the
// exact product rounded once, and q·s (at most 7 + 24 significant bits)
// is exact in float64, so this is float32(float64(q)·float64(s)) bit for
// bit (TestDequantInFloat32), without the two conversions.
func dequant(q int8, s float32) float32 { return float32(q) * s }

// Pack appends the packed values of m to dst and returns it. m must hold
// values e represents (m rounded by [Encoding.Round]); any other value is
// an error, so that packing never loses information.
func (e Encoding) Pack(dst []byte, m *tensor.Matrix) ([]byte, error) {
	if len(m.Data) != m.Rows*m.Cols {
		return dst, fmt.Errorf("wire: matrix %d×%d with %d values", m.Rows, m.Cols, len(m.Data))
	}
	switch e {
	case F32:
		for _, v := range m.Data {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case F16:
		for i, v := range m.Data {
			h := float16.Fromfloat32(v)
			if math.Float32bits(h.Float32()) != math.Float32bits(v) {
				return dst, fmt.Errorf("wire: f16: value %g at index %d is not a float16 value (round before packing)", v, i)
			}
			dst = binary.LittleEndian.AppendUint16(dst, h.Bits())
		}
	case BF16:
		for i, v := range m.Data {
			b := math.Float32bits(v)
			if b&0xffff != 0 {
				return dst, fmt.Errorf("wire: bf16: value %g at index %d is not a bfloat16 value (round before packing)", v, i)
			}
			dst = binary.LittleEndian.AppendUint16(dst, uint16(b>>16))
		}
	case Int8, Int4:
		put, lim := putInt8Row, e.qmax()
		if e == Int4 {
			put = putInt4Row
		}
		for r := range m.Rows {
			var ok bool
			if dst, ok = packScaledRow(dst, m.Data[r*m.Cols:(r+1)*m.Cols], lim, put); !ok {
				return dst, fmt.Errorf("wire: %v: row %d is not a row of q·s values, |q| ≤ %d, with one float32 scale s (round before packing)", e, r, lim)
			}
		}
	default:
		return dst, fmt.Errorf("wire: unknown encoding %d", uint8(e))
	}
	return dst, nil
}

// rowPutter appends a row's scale s and its values under s to dst, or
// reports false (dst as it was) when some value is not q·s: putInt8Row,
// putInt4Row.
type rowPutter func(dst []byte, row []float32, s float32) ([]byte, bool)

// packScaledRow appends row's scale and values to dst (written by put),
// for a scale s that represents row exactly: every value is q·s rounded
// to float32 with q in −lim…lim. For a row whose largest value is normal,
// the scale Round chose gave it q = ±lim and lies within a unit in the
// last place of max|v|/lim: the candidates are a few units either side.
// For a row of subnormals, every value is an integer multiple of the
// smallest float32, and so is the scale Round chose: the greatest common divisor
// of the multiples is a scale that fits. A candidate is accepted only
// when it reproduces every value bit for bit; each value's q is written
// as it is checked (quantExactQ: a multiplication by 1/s per value, a
// division only where that misses), and a candidate is first tried on
// the row's largest value alone, where a scale that does not fit
// usually shows. It reports false, with dst as it was, when no candidate
// fits.
func packScaledRow(dst []byte, row []float32, lim int8, put rowPutter) ([]byte, bool) {
	big, ok := maxAbs(row)
	if !ok {
		return dst, false
	}
	at := 0 // where big is
	for i, v := range row {
		if math.Float32bits(v)&0x7fffffff == math.Float32bits(big) {
			at = i
			break
		}
	}
	if big == 0 {
		return put(dst, row, 0)
	}
	var cands [9]float32
	for _, s := range appendScaleCandidates(cands[:0], row, big, lim) {
		// A scale that misses the largest value misses the row: most
		// candidates fail there, before a pass over the row.
		if s > 0 && !math.IsInf(float64(s), 0) && quantExact(row[at], s, 1/float64(s), lim) {
			if out, ok := put(dst, row, s); ok {
				return out, true
			}
		}
	}
	return dst, false
}

// putInt8Row appends s and row's values under s to dst, or reports false
// (dst as it was) when some value is not q·s.
func putInt8Row(dst []byte, row []float32, s float32) ([]byte, bool) {
	if s == 0 {
		return putZeroRow(dst, row, len(row))
	}
	n0 := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(s))
	inv := 1 / float64(s)
	for _, v := range row {
		q, ok := quantExactQ(v, s, inv, int8Max)
		if !ok {
			return dst[:n0], false
		}
		dst = append(dst, byte(q))
	}
	return dst, true
}

// putZeroRow appends the scale 0 and n zero bytes to dst, the packing of
// a row of +0 in int8 (n = len(row)) or int4 (n = (len(row)+1)/2), or
// reports false (dst as it was) when some value of row is not +0.
func putZeroRow(dst []byte, row []float32, n int) ([]byte, bool) {
	for _, v := range row {
		if math.Float32bits(v) != 0 {
			return dst, false
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, 0)
	for range n {
		dst = append(dst, 0)
	}
	return dst, true
}

// quantExact reports whether v is q·s rounded to float32 for some q in
// −lim…lim (s > 0, finite; inv = 1/s).
func quantExact(v, s float32, inv float64, lim int8) bool {
	_, ok := quantExactQ(v, s, inv, lim)
	return ok
}

// quantExactQ returns the q in −lim…lim with q·s rounded to float32
// equal to v, bit for bit, if there is one (s > 0, finite; inv = 1/s).
// There is at most one: neighbouring multiples of s differ by s, more
// than a unit in the last place of any |v| ≤ lim·s. It tries v·inv
// rounded (a multiplication) first and v/s rounded, the quantisation's
// own rule, only where that misses, so its answer is v/s's.
func quantExactQ(v, s float32, inv float64, lim int8) (int8, bool) {
	l := float64(lim)
	q := math.RoundToEven(float64(v) * inv)
	if q >= -l && q <= l && math.Float32bits(dequant(int8(q), s)) == math.Float32bits(v) {
		return int8(q), true
	}
	q = math.RoundToEven(float64(v) / float64(s))
	if q >= -l && q <= l && math.Float32bits(dequant(int8(q), s)) == math.Float32bits(v) {
		return int8(q), true
	}
	return 0, false
}

// scaleCandidates are the scales packScaledRow tries, in order, for a
// row whose largest magnitude big is not 0, for values q in −lim…lim: the
// greatest common divisor of the values' multiples of the smallest
// float32 when every value is subnormal, then max|v|/lim and four units
// in the last place either side of it, nearest first.
func scaleCandidates(row []float32, big float32, lim int8) []float32 {
	return appendScaleCandidates(nil, row, big, lim)
}

// appendScaleCandidates appends scaleCandidates(row, big, lim) to cands.
func appendScaleCandidates(cands []float32, row []float32, big float32, lim int8) []float32 {
	if big < math.SmallestNonzeroFloat32*(1<<23) { // every value is subnormal
		var g uint32
		for _, v := range row {
			g = gcd(g, math.Float32bits(v)&0x7fffffff)
		}
		cands = append(cands, math.Float32frombits(g))
	}
	s0 := float32(float64(big) / float64(lim))
	cands = append(cands, s0)
	up, down := s0, s0
	for range 4 {
		up, down = math.Nextafter32(up, math.MaxFloat32), math.Nextafter32(down, 0)
		cands = append(cands, down, up)
	}
	return cands
}

func gcd(a, b uint32) uint32 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Unpack decodes b, the packed values of a rows×cols tensor, into m
// (resized). A length that does not match the shape, or an int8 or int4
// scale that is negative or not finite, an int8 value of −128, an int4
// value of −8 or an odd-width int4 row whose last byte's upper half is
// not 0, is an error; the values may be non-finite (the caller checks
// them).
func (e Encoding) Unpack(m *tensor.Matrix, rows, cols int, b []byte) (*tensor.Matrix, error) {
	if !e.Valid() {
		return m, fmt.Errorf("wire: unknown encoding %d", uint8(e))
	}
	if rows < 0 || cols < 0 {
		return m, fmt.Errorf("wire: negative shape %d×%d", rows, cols)
	}
	if want := e.Size(rows, cols); len(b) != want {
		return m, fmt.Errorf("wire: %s: shape %d×%d needs %d bytes, got %d", e, rows, cols, want, len(b))
	}
	if m == nil {
		m = &tensor.Matrix{}
	}
	m = m.Resize(rows, cols)
	switch e {
	case F32:
		for i := range m.Data {
			m.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case F16:
		for i := range m.Data {
			m.Data[i] = float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
		}
	case BF16:
		for i := range m.Data {
			m.Data[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	case Int8:
		for r := range rows {
			p := b[r*(4+cols):]
			s, err := packedScale(p, e, r)
			if err != nil {
				return m, err
			}
			out := m.Data[r*cols : (r+1)*cols]
			for c, x := range p[4 : 4+cols] {
				q := int8(x)
				if q == -128 {
					return m, fmt.Errorf("wire: int8: row %d column %d: value −128 is outside −127…127", r, c)
				}
				out[c] = dequant(q, s)
			}
		}
	case Int4:
		if err := unpackInt4(m.Data, rows, cols, b); err != nil {
			return m, err
		}
	}
	return m, nil
}

// packedScale returns the scale at the start of p, row r of a packing in
// e (Int8, Int4), or an error when it is negative or not finite.
func packedScale(p []byte, e Encoding, r int) (float32, error) {
	s := math.Float32frombits(binary.LittleEndian.Uint32(p))
	if !(s >= 0 && s <= math.MaxFloat32) {
		return 0, fmt.Errorf("wire: %v: row %d: scale %g is not a finite non-negative number", e, r, s)
	}
	return s, nil
}

// Sparse reports whether e has a sparse packing: F32, F16 and BF16 do;
// Int8 and Int4 do not (their values cost a byte or half of one already,
// and each row a scale).
func (e Encoding) Sparse() bool { return e == F32 || e == F16 || e == BF16 }

// width is the bytes of one value in e's dense packing (F32, F16, BF16).
func (e Encoding) width() int {
	if e == F32 {
		return 4
	}
	return 2
}

// SparseSize returns the bytes of m's sparse packing (values and index
// together; see [Encoding.PackSparse]), or −1 when e has none.
func (e Encoding) SparseSize(m *tensor.Matrix) int {
	if !e.Sparse() {
		return -1
	}
	n, prev := 0, -1
	for i, v := range m.Data {
		if math.Float32bits(v) != 0 {
			n += e.width() + uvarintLen(uint64(i-prev-1))
			prev = i
		}
	}
	return n
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// PackSparse appends to vals the values of m that are not +0 (−0 is a
// value), packed as [Encoding.Pack] packs them, and to index their
// positions in row-major order as unsigned varints: the first position,
// then each gap to the next less one. Values e does not hold are an error,
// as in Pack.
func (e Encoding) PackSparse(vals, index []byte, m *tensor.Matrix) ([]byte, []byte, error) {
	if !e.Sparse() {
		return vals, index, fmt.Errorf("wire: %v has no sparse packing", e)
	}
	if len(m.Data) != m.Rows*m.Cols {
		return vals, index, fmt.Errorf("wire: matrix %d×%d with %d values", m.Rows, m.Cols, len(m.Data))
	}
	prev := -1
	for i, v := range m.Data {
		if math.Float32bits(v) == 0 {
			continue
		}
		var err error
		if vals, err = e.packValue(vals, v); err != nil {
			return vals, index, fmt.Errorf("wire: index %d: %w", i, err)
		}
		index = binary.AppendUvarint(index, uint64(i-prev-1))
		prev = i
	}
	return vals, index, nil
}

// UnpackSparse decodes a sparse packing of a rows×cols tensor into m
// (resized; the positions not listed are +0). An index that does not
// decode, runs past the tensor, or lists a different number of positions
// than vals holds values is an error.
func (e Encoding) UnpackSparse(m *tensor.Matrix, rows, cols int, vals, index []byte) (*tensor.Matrix, error) {
	if !e.Sparse() {
		return m, fmt.Errorf("wire: %v has no sparse packing", e)
	}
	if rows < 0 || cols < 0 {
		return m, fmt.Errorf("wire: negative shape %d×%d", rows, cols)
	}
	w := e.width()
	if len(vals)%w != 0 {
		return m, fmt.Errorf("wire: sparse %v: %d bytes of values is not a whole number of %d-byte values", e, len(vals), w)
	}
	if m == nil {
		m = &tensor.Matrix{}
	}
	m = m.Resize(rows, cols)
	clear(m.Data)
	n, k := uint64(len(m.Data)), len(vals)/w
	pos := uint64(0) // the next free position
	for j := 0; j < k; j++ {
		gap, l := binary.Uvarint(index)
		if l <= 0 {
			return m, fmt.Errorf("wire: sparse %v: position %d of %d does not decode", e, j, k)
		}
		index = index[l:]
		if gap >= n-pos {
			return m, fmt.Errorf("wire: sparse %v: position %d lies beyond the %d×%d tensor", e, j, rows, cols)
		}
		i := pos + gap
		pos = i + 1
		m.Data[i] = e.value(vals[j*w:])
	}
	if len(index) > 0 {
		return m, fmt.Errorf("wire: sparse %v: %d positions for %d values", e, k+1, k)
	}
	return m, nil
}

// packValue appends v packed as F32, F16 or BF16, refusing a value the
// encoding does not hold.
func (e Encoding) packValue(dst []byte, v float32) ([]byte, error) {
	switch e {
	case F16:
		h := float16.Fromfloat32(v)
		if math.Float32bits(h.Float32()) != math.Float32bits(v) {
			return dst, fmt.Errorf("wire: f16: value %g is not a float16 value (round before packing)", v)
		}
		return binary.LittleEndian.AppendUint16(dst, h.Bits()), nil
	case BF16:
		b := math.Float32bits(v)
		if b&0xffff != 0 {
			return dst, fmt.Errorf("wire: bf16: value %g is not a bfloat16 value (round before packing)", v)
		}
		return binary.LittleEndian.AppendUint16(dst, uint16(b>>16)), nil
	}
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v)), nil
}

// value decodes the F32, F16 or BF16 value at the start of b.
func (e Encoding) value(b []byte) float32 {
	switch e {
	case F16:
		return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32()
	case BF16:
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}
