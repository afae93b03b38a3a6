package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestPackInt8AsTwoPasses checks the one-pass int8 packing against a
// second implementation, the two passes it replaced (find the scale that
// reproduces every value, then quantise every value under it), written
// out here: the same bytes for rows of every kind — ordinary, one value
// dominating, all subnormal, zeros, a negative zero — and the same
// refusal of a row no scale represents.
func TestPackInt8AsTwoPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 30))
	const cols = 37
	var rows [][]float32
	for i := range 200 {
		row := make([]float32, cols)
		scale := math.Pow(10, float64(rng.IntN(60)-30))
		switch i % 5 {
		case 1: // one value dominating
			row[rng.IntN(cols)] = float32(scale * 1e6)
		case 2: // all subnormal
			scale = float64(math.SmallestNonzeroFloat32) * float64(1+rng.IntN(1<<20))
		case 3: // zeros, a few values
			scale = 0
			row[rng.IntN(cols)] = float32(rng.NormFloat64())
		}
		for j := range row {
			if row[j] == 0 && scale != 0 {
				row[j] = float32(rng.NormFloat64() * scale)
			}
		}
		rows = append(rows, row)
	}
	rows = append(rows, make([]float32, cols)) // all zero
	negZero := make([]float32, cols)
	negZero[5] = float32(math.Copysign(0, -1))
	for _, row := range rows {
		m := &tensor.Matrix{Rows: 1, Cols: cols, Data: append([]float32(nil), row...)}
		if err := Int8.Round(m); err != nil {
			t.Fatal(err)
		}
		got, err := Int8.Pack(nil, m)
		if err != nil {
			t.Fatalf("row %v: %v", m.Data, err)
		}
		want, ok := packTwoPasses(m.Data)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("row %v: packed %v, the two passes give %v (%v)", m.Data, got, want, ok)
		}
	}
	// Unrounded rows and a negative zero among zeros: refused by both.
	for _, row := range [][]float32{rows[0], negZero} {
		_, err := Int8.Pack([]byte{9}, &tensor.Matrix{Rows: 1, Cols: cols, Data: row})
		if _, ok := packTwoPasses(row); err == nil || ok {
			t.Errorf("row %v: packed (err %v) or the two passes accepted it (%v)", row, err, ok)
		}
	}
}

// packTwoPasses is the int8 packing of one row as two passes: the first
// candidate scale (scaleCandidates) under which every value is q·s
// exactly, then every value quantised under it.
func packTwoPasses(row []float32) ([]byte, bool) {
	var big float32
	for _, v := range row {
		if !(math.Abs(float64(v)) <= math.MaxFloat32) {
			return nil, false
		}
		big = max(big, float32(math.Abs(float64(v))))
	}
	fits := func(s float32) bool {
		for _, v := range row {
			if s == 0 {
				if math.Float32bits(v) != 0 {
					return false
				}
				continue
			}
			q := math.RoundToEven(float64(v) / float64(s))
			if q < -127 || q > 127 || math.Float32bits(float32(q*float64(s))) != math.Float32bits(v) {
				return false
			}
		}
		return true
	}
	cands := []float32{0}
	if big != 0 {
		cands = scaleCandidates(row, big, int8Max)
	}
	for _, s := range cands {
		if (s > 0 || big == 0) && !math.IsInf(float64(s), 0) && fits(s) {
			out := binary.LittleEndian.AppendUint32(nil, math.Float32bits(s))
			for _, v := range row {
				q := 0.0
				if s != 0 {
					q = math.RoundToEven(float64(v) / float64(s))
				}
				out = append(out, byte(int8(q)))
			}
			return out, true
		}
	}
	return nil, false
}

// BenchmarkPackInt8 packs a rounded 1024 × 128 message of normal values
// (the WAN row's embedding shape).
func BenchmarkPackInt8(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := tensor.New(1024, 128)
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	if err := Int8.Round(m); err != nil {
		b.Fatal(err)
	}
	dst := make([]byte, 0, 1024*(128+4))
	for b.Loop() {
		var err error
		if dst, err = Int8.Pack(dst[:0], m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundInt8 rounds a 1024 × 128 message of normal values to
// int8 (the WAN row's embedding shape).
func BenchmarkRoundInt8(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, 1024*128)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	m := tensor.New(1024, 128)
	for b.Loop() {
		copy(m.Data, src)
		if err := Int8.Round(m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDequantInFloat32 checks dequant's float32 product against the
// product in float64 rounded once to float32 (its former definition,
// exact before the rounding), bit for bit, for every q in −127…127 and
// scales from every binade, subnormal and near overflow included.
func TestDequantInFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	scales := []float32{0, math.SmallestNonzeroFloat32, 3 * math.SmallestNonzeroFloat32, math.MaxFloat32 / 127, math.MaxFloat32 / 126, math.MaxFloat32}
	for range 20000 {
		scales = append(scales, math.Float32frombits(rng.Uint32()&0x7f7fffff))
	}
	for _, s := range scales {
		for q := -127; q <= 127; q++ {
			want := float32(float64(q) * float64(s))
			if got := dequant(int8(q), s); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("dequant(%d, %g) = %g, want %g", q, s, got, want)
			}
		}
	}
}

// TestMaxAbs checks the largest magnitude by bits against math.Abs and
// max, and that a NaN or an infinity anywhere is refused.
func TestMaxAbs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	row := make([]float32, 128)
	for range 1000 {
		var want float32
		for i := range row {
			row[i] = math.Float32frombits(rng.Uint32() & 0xff7fffff) // finite, either sign
			want = max(want, float32(math.Abs(float64(row[i]))))
		}
		if got, ok := maxAbs(row); !ok || got != want {
			t.Fatalf("maxAbs = %g, %v, want %g, true", got, ok, want)
		}
	}
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
		row[7] = bad
		if _, ok := maxAbs(row); ok {
			t.Errorf("maxAbs accepted a row holding %g", bad)
		}
	}
	if got, ok := maxAbs([]float32{float32(math.Copysign(0, -1)), 0}); !ok || math.Float32bits(got) != 0 {
		t.Errorf("maxAbs(−0, 0) = %g, %v, want +0, true", got, ok)
	}
}
