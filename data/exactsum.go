package data

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
)

// exactSum adds float64 values without rounding, so that the sum (and the
// mean a missing cell takes) does not depend on the order of the rows:
// a two's complement integer in units of 2^-1074, the smallest subnormal.
// A finite float64 is m·2^k with m < 2^53 and −1074 ≤ k ≤ 971, so it spans
// bits 0…2097; three more words hold the sign and 2^190 additions.
type exactSum struct {
	w [35]uint64
}

// add adds v, which must be finite.
func (s *exactSum) add(v float64) {
	b := math.Float64bits(v)
	exp := int(b>>52) & 0x7ff
	m := b & (1<<52 - 1)
	if exp == 0 {
		exp = 1 // subnormal
	} else {
		m |= 1 << 52
	}
	if m == 0 {
		return
	}
	shift := exp - 1 // v = ±m·2^(exp−1075) = ±m·2^shift units
	i, k := shift/64, uint(shift%64)
	lo, hi := m<<k, uint64(0)
	if k > 0 {
		hi = m >> (64 - k)
	}
	var c uint64
	if b>>63 == 0 {
		s.w[i], c = bits.Add64(s.w[i], lo, 0)
		s.w[i+1], c = bits.Add64(s.w[i+1], hi, c)
		for j := i + 2; c != 0 && j < len(s.w); j++ {
			s.w[j], c = bits.Add64(s.w[j], 0, c)
		}
		return
	}
	s.w[i], c = bits.Sub64(s.w[i], lo, 0)
	s.w[i+1], c = bits.Sub64(s.w[i+1], hi, c)
	for j := i + 2; c != 0 && j < len(s.w); j++ {
		s.w[j], c = bits.Sub64(s.w[j], 0, c)
	}
}

// mean returns the sum divided by n > 0, correctly rounded to float64.
func (s *exactSum) mean(n int64) float64 {
	w := s.w
	neg := w[len(w)-1]>>63 == 1
	if neg {
		var c uint64 = 1
		for j := range w {
			w[j], c = bits.Add64(^w[j], 0, c)
		}
	}
	var be [len(w) * 8]byte
	for j, x := range w {
		binary.BigEndian.PutUint64(be[(len(w)-1-j)*8:], x)
	}
	num := new(big.Int).SetBytes(be[:])
	den := new(big.Int).Lsh(big.NewInt(n), 1074)
	f, _ := new(big.Rat).SetFrac(num, den).Float64()
	if neg {
		f = -f
	}
	return f
}
