package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestInt4ByHand rounds, packs and unpacks rows worked out by hand.
// Row [7, 3.5, −2.5, 0.4, −7, 1]: max 7, so s = 1 (7·1 ≥ 7); q = 7,
// round(3.5) = 4 and round(−2.5) = −2 (ties to even), 0, −7, 1. Codes 7,
// 4, 0xe, 0, 9, 1, two per byte, the first in the low half: 0x47, 0x0e,
// 0x19, after the scale 1.0 (0x3f800000, little-endian). Row [14, −1,
// 3] (odd width): s = 2, q = 7, round(−0.5) = 0 (sent as +0), round(1.5)
// = 2; bytes 0x07 and 0x02, whose unused high half is 0. A row of zeros
// and −0: scale 0, every value +0.
func TestInt4ByHand(t *testing.T) {
	scale := func(s float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(s)) }
	for _, tc := range []struct {
		in, want []float32
		packed   []byte
	}{
		{[]float32{7, 3.5, -2.5, 0.4, -7, 1}, []float32{7, 4, -2, 0, -7, 1}, append(scale(1), 0x47, 0x0e, 0x19)},
		{[]float32{14, -1, 3}, []float32{14, 0, 4}, append(scale(2), 0x07, 0x02)},
		{[]float32{0, float32(math.Copysign(0, -1)), 0}, []float32{0, 0, 0}, append(scale(0), 0, 0)},
	} {
		m := matrix(1, len(tc.in), tc.in...)
		if err := Int4.Round(m); err != nil {
			t.Fatal(err)
		}
		if !bitsEqual(m.Data, tc.want) {
			t.Errorf("Round(%v) = %v, want %v", tc.in, m.Data, tc.want)
		}
		b, err := Int4.Pack([]byte{0xaa}, m)
		if err != nil || !bytes.Equal(b[1:], tc.packed) || b[0] != 0xaa {
			t.Errorf("Pack(%v) = % x (%v), want aa % x", m.Data, b, err, tc.packed)
		}
		got, err := Int4.Unpack(nil, 1, len(tc.in), tc.packed)
		if err != nil || !bitsEqual(got.Data, tc.want) {
			t.Errorf("Unpack(% x) = %v (%v), want %v", tc.packed, got, err, tc.want)
		}
	}
	// Two rows of one matrix: each its own scale and bytes, back to back.
	m := matrix(2, 3, 14, -1, 3, 0, 0, 0)
	if err := Int4.Round(m); err != nil {
		t.Fatal(err)
	}
	b, err := Int4.Pack(nil, m)
	if want := append(append(scale(2), 0x07, 0x02), append(scale(0), 0, 0)...); err != nil || !bytes.Equal(b, want) {
		t.Errorf("two rows packed as % x (%v), want % x", b, err, want)
	}
}

// TestInt4EveryCode checks the rounding of every code against the rule
// computed here in float64: for scales s from many binades (with few
// significant bits, so that 7·s is exact and the row's scale is s
// itself), each q in −7…7 and values from (q−½)·s to (q+½)·s, the value
// v in a row whose largest magnitude is 7·s rounds to q·s with q =
// round(v/s) (ties to even), within s/2 of v; its packed code is q's 4-bit
// two's complement, and it unpacks to q·s.
func TestInt4EveryCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 30))
	scales := []float32{1, 0.5, 3, float32(math.Ldexp(1, -120)), float32(math.Ldexp(1, 100))}
	for range 40 {
		scales = append(scales, float32(math.Ldexp(float64(1+rng.IntN(1<<10)), rng.IntN(200)-110)))
	}
	offsets := []float64{-0.5, -0.4999, -0.25, -0.01, 0, 0.01, 0.25, 0.4999, 0.5}
	for _, s := range scales {
		sf := float64(s)
		for q := -7; q <= 7; q++ {
			for _, o := range offsets {
				v := float32((float64(q) + o) * sf)
				if math.Abs(float64(v)) > 7*sf { // beyond the row's largest value
					continue
				}
				m := matrix(1, 2, 7*s, v)
				if err := Int4.Round(m); err != nil {
					t.Fatal(err)
				}
				wantQ := int(math.RoundToEven(float64(v) / sf)) // q = 0 is +0 on the wire
				want := float32(float64(wantQ) * sf)
				if math.Float32bits(m.Data[1]) != math.Float32bits(want) || m.Data[0] != 7*s {
					t.Fatalf("s %g: %g rounded to %g (largest %g), want %g", s, v, m.Data[1], m.Data[0], want)
				}
				if d := math.Abs(float64(m.Data[1]) - float64(v)); d > sf/2 {
					t.Fatalf("s %g: %g rounded to %g, off by %g > s/2", s, v, m.Data[1], d)
				}
				b, err := Int4.Pack(nil, m)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := math.Float32frombits(binary.LittleEndian.Uint32(b)), s; got != want {
					t.Fatalf("packed scale %g, want %g", got, want)
				}
				code := byte((wantQ + 16) % 16)
				if b[4] != 0x7|code<<4 {
					t.Fatalf("s %g, v %g: byte 0x%02x, want 0x%02x (codes 7 and %d)", s, v, b[4], 0x7|code<<4, code)
				}
				got, err := Int4.Unpack(nil, 1, 2, b)
				if err != nil || !bitsEqual(got.Data, m.Data) {
					t.Fatalf("unpack(% x) = %v (%v), want %v", b, got, err, m.Data)
				}
			}
		}
	}
}

// TestInt4UnpackEveryByte decodes every byte as a row of two values under
// scale 0.5, against the codes read here with arithmetic (a code n ≥ 8
// is n − 16): the bytes holding the code 8 are refused, every other byte
// gives the two values; with one column, a byte whose high half is not
// 0 is refused.
func TestInt4UnpackEveryByte(t *testing.T) {
	code := func(n int) int {
		if n >= 8 {
			return n - 16
		}
		return n
	}
	for x := range 256 {
		b := append(binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.5)), byte(x))
		lo, hi := code(x&15), code(x>>4)
		m, err := Int4.Unpack(nil, 1, 2, b)
		if (lo == -8 || hi == -8) != (err != nil) {
			t.Fatalf("byte 0x%02x: %v", x, err)
		}
		if err == nil && (m.Data[0] != float32(lo)/2 || m.Data[1] != float32(hi)/2) {
			t.Fatalf("byte 0x%02x: %v, want [%g %g]", x, m.Data, float32(lo)/2, float32(hi)/2)
		}
		m, err = Int4.Unpack(nil, 1, 1, b)
		if (lo == -8 || hi != 0) != (err != nil) {
			t.Fatalf("byte 0x%02x in a one-column row: %v", x, err)
		}
		if err == nil && m.Data[0] != float32(lo)/2 {
			t.Fatalf("byte 0x%02x in a one-column row: %v, want %g", x, m.Data, float32(lo)/2)
		}
	}
}

// FuzzUnpackInt4 feeds arbitrary bytes to the int4 decoder (what a peer
// sends is outside input) for shapes up to 4×5, against a decoder written
// here: it refuses exactly what the reference refuses (a length that does
// not match, a scale negative or not finite, the code 8, an odd-width
// row's last high half not 0) and otherwise gives the reference's
// values bit for bit, never a panic.
func FuzzUnpackInt4(f *testing.F) {
	f.Add(uint8(1), uint8(3), append(binary.LittleEndian.AppendUint32(nil, math.Float32bits(2)), 0x07, 0x02))
	f.Add(uint8(2), uint8(2), []byte{0, 0, 0x80, 0x3f, 0x9f, 0, 0, 0, 0, 0x81})
	f.Fuzz(func(t *testing.T, rows, cols uint8, b []byte) {
		r, c := int(rows%5), int(cols%6)
		want, ok := refUnpackInt4(r, c, b)
		m, err := Int4.Unpack(tensor.New(2, 2), r, c, b)
		if ok != (err == nil) {
			t.Fatalf("%d×%d % x: decoder error %v, the reference accepts: %v", r, c, b, err, ok)
		}
		if ok && (m.Rows != r || m.Cols != c || !bitsEqual(m.Data, want)) {
			t.Fatalf("%d×%d % x: %d×%d %v, want %v", r, c, b, m.Rows, m.Cols, m.Data, want)
		}
	})
}

// refUnpackInt4 decodes the int4 packing value by value from its
// description (proto/splitguard.proto, ENCODING_INT4), or reports false.
func refUnpackInt4(rows, cols int, b []byte) ([]float32, bool) {
	w := 4 + (cols+1)/2
	if len(b) != rows*w {
		return nil, false
	}
	var out []float32
	for r := range rows {
		s := math.Float32frombits(binary.LittleEndian.Uint32(b[r*w:]))
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) || s < 0 {
			return nil, false
		}
		for c := range (cols + 1) / 2 * 2 {
			x := int(b[r*w+4+c/2])
			n := x & 15
			if c%2 == 1 {
				n = x >> 4
			}
			if c == cols { // the unused half
				if n != 0 {
					return nil, false
				}
				continue
			}
			if n == 8 {
				return nil, false
			}
			if n > 8 {
				n -= 16
			}
			out = append(out, float32(float64(n)*float64(s)))
		}
	}
	return out, true
}
