package wire

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func matrix(rows, cols int, v ...float32) *tensor.Matrix {
	m := tensor.New(rows, cols)
	copy(m.Data, v)
	return m
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestRoundByHand checks each encoding's rounding on values whose
// neighbours in the encoding are worked out by hand: float16 has 10
// mantissa bits (ulp 2^-10 at 1), bfloat16 7 (ulp 2^-7 at 1); ties go to
// the even neighbour; int8 with scale max|v|/127.
func TestRoundByHand(t *testing.T) {
	p := func(e int) float32 { return float32(math.Ldexp(1, e)) }
	tests := []struct {
		enc        Encoding
		rows, cols int
		in, want   []float32
	}{
		{F32, 1, 3, []float32{1 + p(-20), -3.25, p(-140)}, []float32{1 + p(-20), -3.25, p(-140)}},
		// 1+2^-11 is half an ulp: ties to even 1; 1+3·2^-11 is 1.5 ulp: to 1+2^-9;
		// 2^-24 is float16's smallest subnormal, 2^-26 a quarter of it: 0;
		// 65504 is float16's largest value; -0 stays -0.
		{F16, 1, 6, []float32{1 + p(-11), 1 + 3*p(-11), p(-24), p(-26), 65504, float32(math.Copysign(0, -1))},
			[]float32{1, 1 + p(-9), p(-24), 0, 65504, float32(math.Copysign(0, -1))}},
		// bfloat16: 1+2^-8 ties to 1, 1+3·2^-8 to 1+2^-6, 1+2^-8+2^-20 above the tie to 1+2^-7;
		// 3e38 is in range (bfloat16 keeps float32's exponent).
		{BF16, 1, 4, []float32{1 + p(-8), 1 + 3*p(-8), 1 + p(-8) + p(-20), -2},
			[]float32{1, 1 + p(-6), 1 + p(-7), -2}},
		// int8, row 1: max 254, s = 2: q = 127, round(1.5) = 2 (even), round(-0.5) = 0 (even), round(-2.5) = -2.
		// Row 2: max 127, s = 1: q = 127, -64 (round(-63.5) to even), 0.
		// Row 3: zeros and -0: all +0 (scale 0).
		{Int8, 3, 4, []float32{254, 3, -1, -5, 127, -63.5, 0.25, 0, 0, float32(math.Copysign(0, -1)), 0, 0},
			[]float32{254, 4, 0, -4, 127, -64, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		m := matrix(tc.rows, tc.cols, tc.in...)
		if err := tc.enc.Round(m); err != nil {
			t.Fatalf("%v: %v", tc.enc, err)
		}
		if !bitsEqual(m.Data, tc.want) {
			t.Errorf("%v: Round(%v) = %v, want %v", tc.enc, tc.in, m.Data, tc.want)
		}
	}
}

// TestRoundRefusesOutOfRange checks that a value an encoding cannot hold
// is an error, not an infinity: float16 ends at 65504 (65520 is the tie
// with the next power, 65536, which is infinite), bfloat16 at about
// 3.39e38 (MaxFloat32 rounds up to infinity).
func TestRoundRefusesOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		enc Encoding
		v   float32
	}{{F16, 65520}, {F16, -1e5}, {BF16, math.MaxFloat32}, {Int8, float32(math.Inf(1))}, {Int4, float32(math.NaN())}} {
		err := tc.enc.Round(matrix(1, 2, 1, tc.v))
		if err == nil {
			t.Errorf("%v: Round(%g) accepted", tc.enc, tc.v)
		}
	}
	for _, enc := range []Encoding{Int8, Int4} {
		if err := enc.Round(matrix(1, 2, math.MaxFloat32, -math.MaxFloat32)); err != nil {
			t.Errorf("%v refused the largest float32: %v", enc, err)
		}
	}
}

// TestSize checks the packed sizes against the formats: 4, 2, 2 bytes
// per value, 1 per value plus a 4-byte scale per row, and half a byte
// per value plus a 4-byte scale per row; for a 1024×128 tensor, 524,288,
// 262,144, 262,144, 131,072 + 4,096 and 65,536 + 4,096 bytes.
func TestSize(t *testing.T) {
	want := map[Encoding]int{F32: 524288, F16: 262144, BF16: 262144, Int8: 131072 + 4096, Int4: 65536 + 4096}
	for enc, n := range want {
		if got := enc.Size(1024, 128); got != n {
			t.Errorf("%v: Size(1024, 128) = %d, want %d", enc, got, n)
		}
		m := tensor.New(1024, 128)
		b, err := enc.Pack(nil, m)
		if err != nil || len(b) != n {
			t.Errorf("%v: Pack gives %d bytes (%v), want %d", enc, len(b), err, n)
		}
	}
}

// rows returns test rows: random scales from subnormal to huge, with
// zeros, ±0, subnormals and the largest float32 mixed in.
func testRows(rng *rand.Rand, rows, cols int) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for r := range rows {
		scale := math.Ldexp(1, rng.IntN(290)-160)
		kind := rng.IntN(6)
		for c := range cols {
			v := float32(rng.NormFloat64() * scale)
			switch {
			case kind == 0:
				v = 0
			case kind == 1 && c%2 == 0:
				v = float32(math.Copysign(0, -1))
			case kind == 2 && c == 0:
				v = math.MaxFloat32
			case kind == 3:
				v = math.Float32frombits(uint32(rng.IntN(300))) // subnormals
			}
			if math.IsInf(float64(v), 0) {
				v = math.MaxFloat32
			}
			m.Data[r*cols+c] = v
		}
	}
	return m
}

// TestPackLossless checks that unpack(pack(round(x))) == round(x) bit for
// bit, on rows of every scale including zeros, ±0, subnormals and the
// largest float32 (float16 rows are kept within its range).
func TestPackLossless(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, enc := range []Encoding{F32, F16, BF16, Int8, Int4} {
		for trial := range 200 {
			m := testRows(rng, 7, 1+trial%13)
			for i, v := range m.Data {
				if enc == F16 && math.Abs(float64(v)) > 65504 {
					m.Data[i] = float32(math.Mod(float64(v), 65504))
				}
				if enc == BF16 && math.Abs(float64(v)) > 3e38 {
					m.Data[i] = 3e38
				}
			}
			orig := append([]float32(nil), m.Data...)
			if err := enc.Round(m); err != nil {
				t.Fatalf("%v: %v", enc, err)
			}
			checkRoundingError(t, enc, m.Cols, orig, m.Data)
			b, err := enc.Pack(nil, m)
			if err != nil {
				t.Fatalf("%v trial %d: Pack of a rounded tensor: %v", enc, trial, err)
			}
			got, err := enc.Unpack(nil, m.Rows, m.Cols, b)
			if err != nil {
				t.Fatal(err)
			}
			if !bitsEqual(got.Data, m.Data) {
				t.Fatalf("%v trial %d: unpack(pack(round(x))) differs from round(x):\n%v\n%v", enc, trial, got.Data, m.Data)
			}
		}
	}
}

// checkRoundingError checks each rounded value against the encoding's
// error bound: half an ulp of the format (relative 2^-11 for float16's
// normal range, 2^-8 for bfloat16, plus half the smallest subnormal), and
// for int8 and int4 half the row's scale, at most max|x|/127 (/7) plus
// one subnormal step (plus a float32 rounding).
func checkRoundingError(t *testing.T, enc Encoding, cols int, x, r []float32) {
	t.Helper()
	for i := range x {
		d := math.Abs(float64(r[i]) - float64(x[i]))
		var bound float64
		switch enc {
		case F32:
			bound = 0
		case F16:
			bound = math.Abs(float64(x[i]))*math.Ldexp(1, -11) + math.Ldexp(1, -25)
		case BF16:
			bound = math.Abs(float64(x[i]))*math.Ldexp(1, -8) + math.Ldexp(1, -134)
		case Int8, Int4:
			lim := 127.0
			if enc == Int4 {
				lim = 7
			}
			row := x[i/cols*cols : (i/cols+1)*cols]
			var big float64
			for _, v := range row {
				big = max(big, math.Abs(float64(v)))
			}
			bound = 0.5*(big/lim*(1+1e-6)+math.Ldexp(1, -149)) + math.Abs(float64(r[i]))*math.Ldexp(1, -24)
		}
		if d > bound {
			t.Fatalf("%v: %g rounded to %g: error %g exceeds %g", enc, x[i], r[i], d, bound)
		}
	}
}

// TestPackRefusesUnrounded checks that packing never loses information: a
// value between two of the encoding's values is refused.
func TestPackRefusesUnrounded(t *testing.T) {
	for _, tc := range []struct {
		enc Encoding
		m   *tensor.Matrix
	}{
		{F16, matrix(1, 2, 1, 1+float32(math.Ldexp(1, -20)))},
		{BF16, matrix(1, 1, 1+float32(math.Ldexp(1, -20)))},
		{Int8, matrix(1, 2, 1, 0.3333)},                           // 0.3333·127 = 42.33: not q/127
		{Int8, matrix(1, 2, 0, float32(math.Copysign(0, -1)))},    // -0 is not q·s
		{Int8, matrix(1, 2, float32(math.Inf(1)), 1)},             // not finite
		{Int8, matrix(1, 3, 254, 3, 0)},                           // 3 is not a multiple of 2
		{F16, matrix(1, 1, float32(math.Ldexp(1, -30)))},          // below float16's subnormals
		{Int8, matrix(1, 2, float32(math.Ldexp(1, -149)), 3e-45)}, // subnormal, fine...
		{Int4, matrix(1, 2, 7, 8)},                                // 8 is not q·8/7 for q ≤ 7
		{Int4, matrix(1, 3, 7, 2.5, 0)},                           // with s = 1, 2.5 is not q·s
		{Int4, matrix(1, 2, 0, float32(math.Copysign(0, -1)))},    // -0 is not q·s
		{Int4, matrix(1, 2, 127, 1)},                              // an int8 row: 1 is not q·127/7
	} {
		_, err := tc.enc.Pack(nil, tc.m)
		if tc.enc == Int8 && tc.m.Data[0] == float32(math.Ldexp(1, -149)) {
			// ...2 and 1 times the smallest float32: representable with s = 2^-149.
			if err != nil {
				t.Errorf("int8: Pack(%v): %v", tc.m.Data, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%v: Pack(%v) accepted a value the encoding does not hold", tc.enc, tc.m.Data)
		}
	}
}

// TestUnpackRefuses checks the decoder's refusals: a payload whose length
// does not match the shape, an unknown encoding, an int8 scale that is
// negative or NaN, and the int8 value −128.
func TestUnpackRefuses(t *testing.T) {
	row := func(s float32, q ...byte) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, math.Float32bits(s)), q...)
	}
	for _, tc := range []struct {
		name string
		enc  Encoding
		b    []byte
		want string
	}{
		{"short f16", F16, make([]byte, 3), "needs 4 bytes, got 3"},
		{"long f32", F32, make([]byte, 12), "needs 8 bytes, got 12"},
		{"int8 without scales", Int8, make([]byte, 2), "needs 6 bytes, got 2"},
		{"unknown", Encoding(9), make([]byte, 8), "unknown encoding 9"},
		{"negative scale", Int8, row(-1, 1, 2), "scale -1"},
		{"NaN scale", Int8, row(float32(math.NaN()), 1, 2), "scale NaN"},
		{"-128", Int8, row(1, 0x80, 2), "−128"},
		{"int4 without scales", Int4, make([]byte, 1), "needs 5 bytes, got 1"},
		{"int4 negative scale", Int4, row(-2, 0x11), "int4: row 0: scale -2"},
		{"int4 infinite scale", Int4, row(float32(math.Inf(1)), 0x11), "scale +Inf"},
		{"int4 -8 low", Int4, row(1, 0x18), "column 0: code 0x8 (−8)"},
		{"int4 -8 high", Int4, row(1, 0x81), "column 1: code 0x8 (−8)"},
	} {
		_, err := tc.enc.Unpack(nil, 1, 2, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Unpack error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	// A valid int8 row by hand: scale 0.5, q = 3, -127: 1.5, -63.5.
	m, err := Int8.Unpack(nil, 1, 2, row(0.5, 3, 0x81))
	if err != nil || !bitsEqual(m.Data, []float32{1.5, -63.5}) {
		t.Errorf("Unpack of scale 0.5, q 3, -127 = %v, %v; want [1.5 -63.5]", m, err)
	}
}

// TestParse checks the names and the refusal of an unknown one.
func TestParse(t *testing.T) {
	for i, n := range Names() {
		e, err := Parse(n)
		if err != nil || e != Encoding(i) || e.String() != n {
			t.Errorf("Parse(%q) = %v, %v", n, e, err)
		}
	}
	if _, err := Parse("fp8"); err == nil || !strings.Contains(err.Error(), "f32, f16, bf16, int8, int4") {
		t.Errorf("Parse(fp8): %v, want an error listing the encodings", err)
	}
}

// FuzzRoundPack checks, on arbitrary float32 bit patterns, that Round
// either refuses or gives values that Pack accepts and Unpack restores bit
// for bit.
func FuzzRoundPack(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{0, 0, 0x80, 0x3f, 1, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0x7f, 0x7f})
	f.Add(uint8(4), uint8(2), []byte{0, 0, 0x80, 0x3f, 1, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0x40, 0xc0, 0, 0, 0xe0, 0x40})
	f.Fuzz(func(t *testing.T, enc, cols uint8, raw []byte) {
		e := Encoding(int(enc) % len(names))
		c := int(cols%8) + 1
		n := len(raw) / 4 / c * c
		if n == 0 {
			return
		}
		m := tensor.New(n/c, c)
		for i := range m.Data {
			m.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		if tensor.CheckFinite("x", m) != nil {
			return
		}
		if e.Round(m) != nil {
			return
		}
		b, err := e.Pack(nil, m)
		if err != nil {
			t.Fatalf("%v: Pack of a rounded tensor %v: %v", e, m.Data, err)
		}
		got, err := e.Unpack(nil, m.Rows, m.Cols, b)
		if err != nil || !bitsEqual(got.Data, m.Data) {
			t.Fatalf("%v: unpack(pack(round(x))) = %v (%v), want %v", e, got, err, m.Data)
		}
	})
}

// TestSparseByHand packs a tensor whose sparse packing is written out by
// hand: a 2×3 float32 tensor with 1.5 at position 2 and −0 at position 4
// (−0 is a value, only +0 is left out) has index bytes 2 (the first
// position) and 1 (the gap 4−2−1), and 8 bytes of values; a value at
// position 200 of a 1×300 tensor has the two-byte varint 0xc8 0x01.
func TestSparseByHand(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	m := matrix(2, 3, 0, 0, 1.5, 0, negZero, 0)
	vals, index, err := F32.PackSparse(nil, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	wantVals := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5)), 1<<31)
	if string(index) != "\x02\x01" || string(vals) != string(wantVals) || F32.SparseSize(m) != 10 {
		t.Errorf("sparse packing: index %x, values %x, size %d; want 0201, %x, 10", index, vals, F32.SparseSize(m), wantVals)
	}
	got, err := F32.UnpackSparse(nil, 2, 3, vals, index)
	if err != nil || !bitsEqual(got.Data, m.Data) {
		t.Errorf("UnpackSparse = %v, %v; want %v", got, err, m.Data)
	}
	far := tensor.New(1, 300)
	far.Data[200] = 2
	vals, index, err = BF16.PackSparse(nil, nil, far)
	if err != nil || string(index) != "\xc8\x01" || string(vals) != "\x00\x40" {
		t.Errorf("bf16 2 at position 200: index %x, values %x (%v); want c801, 0040", index, vals, err)
	}
	if Int8.SparseSize(m) != -1 || Int4.SparseSize(m) != -1 {
		t.Error("int8 or int4 claims a sparse packing")
	}
}

// TestSparseLossless checks that sparse packing restores every value bit
// for bit at densities from 0 to 1, and that SparseSize is its length.
func TestSparseLossless(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, enc := range []Encoding{F32, F16, BF16} {
		for _, density := range []float64{0, 0.01, 0.3, 1} {
			m := tensor.New(17, 40)
			for i := range m.Data {
				if rng.Float64() < density {
					m.Data[i] = float32(rng.NormFloat64())
				}
			}
			if err := enc.Round(m); err != nil {
				t.Fatal(err)
			}
			vals, index, err := enc.PackSparse(nil, nil, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(vals)+len(index) != enc.SparseSize(m) {
				t.Errorf("%v density %g: %d bytes, SparseSize says %d", enc, density, len(vals)+len(index), enc.SparseSize(m))
			}
			got, err := enc.UnpackSparse(tensor.New(3, 3), 17, 40, vals, index)
			if err != nil || !bitsEqual(got.Data, m.Data) {
				t.Fatalf("%v density %g: sparse round trip differs (%v)", enc, density, err)
			}
		}
	}
}

// TestUnpackSparseRefuses checks the sparse decoder's refusals.
func TestUnpackSparseRefuses(t *testing.T) {
	two := []byte{0, 0x3c, 0, 0x40} // f16 1 and 2
	for _, tc := range []struct {
		name        string
		enc         Encoding
		vals, index []byte
		want        string
	}{
		{"beyond", F16, two, []byte{5, 0}, "beyond the 2×3 tensor"},
		{"gap beyond", F16, two, []byte{0, 5}, "beyond the 2×3 tensor"},
		{"more positions", F16, two, []byte{0, 0, 0}, "3 positions for 2 values"},
		{"fewer positions", F16, two, []byte{0}, "position 1 of 2 does not decode"},
		{"odd values", F16, two[:3], []byte{0}, "not a whole number"},
		{"int8", Int8, two, []byte{0, 0}, "no sparse packing"},
	} {
		_, err := tc.enc.UnpackSparse(nil, 2, 3, tc.vals, tc.index)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
}

// FuzzUnpackSparse feeds arbitrary bytes to the sparse decoder: an error
// or a tensor of the asked shape, never a panic; a tensor it accepts packs
// back to at most as many bytes.
func FuzzUnpackSparse(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0xc0, 0x3f}, []byte{2})
	f.Fuzz(func(t *testing.T, enc uint8, vals, index []byte) {
		e := Encoding(enc % 3)
		m, err := e.UnpackSparse(nil, 3, 5, vals, index)
		if err != nil {
			return
		}
		if m.Rows != 3 || m.Cols != 5 || len(m.Data) != 15 {
			t.Fatalf("shape %d×%d, %d values", m.Rows, m.Cols, len(m.Data))
		}
		if s := e.SparseSize(m); s > len(vals)+len(index) {
			t.Fatalf("repacked in %d bytes, more than the %d decoded", s, len(vals)+len(index))
		}
	})
}
