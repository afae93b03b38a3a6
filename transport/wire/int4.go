package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The int4 packing of one row of cols values: the row's scale s as a
// little-endian float32, then (cols+1)/2 bytes, value 2j in the low half
// of byte j and value 2j+1 in its high half, each q in −7…7 as a 4-bit
// two's complement (−7 is 0x9, −1 0xf); the code 0x8 (−8) is not used.
// A row of odd width leaves the last byte's high half 0. The value is q·s
// rounded to float32, as in int8.

// putInt4Row appends s and row's values under s to dst in the int4
// packing, or reports false (dst as it was) when some value is not q·s
// with q in −7…7.
func putInt4Row(dst []byte, row []float32, s float32) ([]byte, bool) {
	if s == 0 {
		return putZeroRow(dst, row, (len(row)+1)/2)
	}
	n0 := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(s))
	inv := 1 / float64(s)
	var lo byte
	for c, v := range row {
		q, ok := quantExactQ(v, s, inv, int4Max)
		if !ok {
			return dst[:n0], false
		}
		if c&1 == 0 {
			lo = byte(q) & 0x0f
		} else {
			dst = append(dst, lo|byte(q)<<4)
		}
	}
	if len(row)&1 == 1 {
		dst = append(dst, lo)
	}
	return dst, true
}

// nibble returns the q of a 4-bit code (its two's complement, −8…7).
func nibble(code byte) int8 { return int8(code<<4) >> 4 }

// unpackInt4 decodes b, the int4 packing of a rows×cols tensor whose
// length was checked, into out (rows×cols values). A scale that is
// negative or not finite, the code of −8, or a high half that is not 0
// in the last byte of an odd-width row, is an error.
func unpackInt4(out []float32, rows, cols int, b []byte) error {
	w := 4 + (cols+1)/2
	var table [16]float32 // each code's value under the row's scale
	for r := range rows {
		p := b[r*w : (r+1)*w]
		s, err := packedScale(p, Int4, r)
		if err != nil {
			return err
		}
		for code := range table {
			table[code] = dequant(nibble(byte(code)), s)
		}
		o := out[r*cols : (r+1)*cols]
		pairs := p[4 : 4+cols/2]
		for j, x := range pairs {
			if x&0x0f == 0x08 || x&0xf0 == 0x80 {
				return int4Refusal(r, 2*j, x, false)
			}
			o[2*j], o[2*j+1] = table[x&0x0f], table[x>>4]
		}
		if cols&1 == 1 {
			x := p[w-1]
			if x&0x0f == 0x08 || x&0xf0 != 0 {
				return int4Refusal(r, cols-1, x, true)
			}
			o[cols-1] = table[x]
		}
	}
	return nil
}

// int4Refusal says why the byte x, holding the values of columns c and
// c+1 of row r (c alone and an unused high half when padded: the last
// byte of an odd-width row), is refused.
func int4Refusal(r, c int, x byte, padded bool) error {
	if x&0x0f == 0x08 {
		return fmt.Errorf("wire: int4: row %d column %d: code 0x8 (−8) is outside −7…7", r, c)
	}
	if !padded {
		return fmt.Errorf("wire: int4: row %d column %d: code 0x8 (−8) is outside −7…7", r, c+1)
	}
	return fmt.Errorf("wire: int4: row %d: the unused high half of the last byte of an odd-width row is 0x%x, not 0", r, x>>4)
}
