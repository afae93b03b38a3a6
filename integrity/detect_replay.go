package integrity

import (
	"math"
	"slices"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "replay",
		Help: "1 when a batch's embedding equals an earlier batch's up to a row permutation, else 0 (exact; one 64-bit hash a batch)",
		New:  func() Detector { return &replayDetector{seen: map[uint64]int64{}} }})
}

// replayDetector keeps one hash per training batch: the hash of the
// sorted hashes of its rows (FNV-1a over the float32 bits), so that a
// batch equal to an earlier one up to the order of its rows has the same.
type replayDetector struct {
	seen map[uint64]int64 // batch hash → first step
	rows []uint64
}

func (d *replayDetector) Name() string { return "replay" }

func (d *replayDetector) Observe(step int64, e *tensor.Matrix) float64 {
	h := BatchHash(e, &d.rows)
	if _, ok := d.seen[h]; ok {
		return 1
	}
	d.seen[h] = step
	return 0
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// BatchHash is the replay detector's hash of e: FNV-1a 64 of each row's
// float32 bits, the row hashes sorted and hashed again with the shape,
// so that it is invariant to a permutation of the rows. scratch, when
// non-nil, holds the row hashes between calls.
func BatchHash(e *tensor.Matrix, scratch *[]uint64) uint64 {
	var rows []uint64
	if scratch != nil {
		rows = (*scratch)[:0]
	}
	for r := range e.Rows {
		h := uint64(fnvOffset)
		for _, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			h = mix(h, uint64(math.Float32bits(v)))
		}
		rows = append(rows, h)
	}
	slices.Sort(rows)
	h := mix(mix(uint64(fnvOffset), uint64(e.Rows)), uint64(e.Cols))
	for _, x := range rows {
		h = mix(h, x)
	}
	if scratch != nil {
		*scratch = rows
	}
	return h
}

// mix folds the 8 bytes of x into h (FNV-1a).
func mix(h, x uint64) uint64 {
	for range 8 {
		h ^= x & 0xff
		h *= fnvPrime
		x >>= 8
	}
	return h
}
