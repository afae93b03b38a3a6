package integrity

import (
	"math"
	"math/bits"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "replay",
		Help: "1 when a batch's embedding equals an earlier batch's of other rows, up to a row permutation, else 0 (exact; one 64-bit hash a batch)",
		New:  func() Detector { return &replayDetector{seen: map[uint64]uint64{}} },
		// On by default: an honest bottom, whose parameters change at
		// every step, sends one batch of rows bit for bit as it sent
		// another batch of other rows only if it maps the rows of both to
		// one multiset of vectors (a dead bottom: every row alike);
		// integrity.md §3.
		Default: true, DefaultAlarm: 1,
		Verdict: "the passive party sent the embedding of an earlier batch, bit for bit, for other rows: a stale replay or a constant free-rider (or a bottom whose output no longer depends on its input)"})
}

// replayDetector keeps one hash per training batch of a new embedding
// (BatchHash, invariant to the order of the rows), with the hash of that
// batch's row IDs (RowsHash) when it is told them.
type replayDetector struct {
	seen map[uint64]uint64 // batch hash → the row-ID hash of its first batch
}

func (d *replayDetector) Name() string { return "replay" }

// Observe scores a batch whose rows are not known: 1 when its embedding
// equals an earlier batch's.
func (d *replayDetector) Observe(_ int64, e *tensor.Matrix) float64 {
	h := BatchHash(e, nil)
	if _, ok := d.seen[h]; ok {
		return 1
	}
	d.seen[h] = 0
	return 0
}

// ObserveRows scores a batch of the training split's rows: 1 when its
// embedding equals that of an earlier batch of another set of rows. The
// same rows sent alike again are not a replay: a bottom that did not
// change between the two steps sends them so (a full-batch schedule
// after a step with a zero gradient to the embedding, as the first under
// a top whose deep logit weights start at zero).
func (d *replayDetector) ObserveRows(_ int64, rows []int, e *tensor.Matrix) float64 {
	h, ids := BatchHash(e, nil), RowsHash(rows)
	if first, ok := d.seen[h]; ok {
		if first != ids {
			return 1
		}
		return 0
	}
	d.seen[h] = ids
	return 0
}

// xxHash64's multipliers.
const (
	prime1 = 0x9E3779B185EBCA87
	prime2 = 0xC2B2AE3D27D4EB4F
	prime3 = 0x165667B19E3779F9
)

// fmix is xxHash64's avalanche: every input bit flips each output bit
// with probability about ½.
func fmix(x uint64) uint64 {
	x ^= x >> 33
	x *= prime2
	x ^= x >> 29
	x *= prime3
	return x ^ x>>32
}

// BatchHash is the replay detector's hash of e: each row's float32 bits
// folded two values at a time by xxHash64's round (four lanes) and
// finalised by its avalanche, the
// row hashes added (so that any permutation of the rows hashes alike)
// and mixed with the shape. Two different batches hash alike with
// probability about 2⁻⁶⁴. One multiply-rotate round per two values keeps
// it cheap enough to run on every batch (integrity.md §11f). The scratch
// argument is unused and kept for callers of the earlier version.
func BatchHash(e *tensor.Matrix, _ *[]uint64) uint64 {
	var sum uint64
	d := e.Cols
	for r := range e.Rows {
		row := e.Data[r*d : (r+1)*d]
		// four independent lanes of eight values a round, so that the
		// multiplies of one lane need not wait for another's
		h0, h1, h2, h3 := uint64(prime3)+uint64(d), uint64(prime2), uint64(prime1), uint64(0)
		i := 0
		for ; i+8 <= len(row); i += 8 {
			h0 = round(h0, pair(row[i], row[i+1]))
			h1 = round(h1, pair(row[i+2], row[i+3]))
			h2 = round(h2, pair(row[i+4], row[i+5]))
			h3 = round(h3, pair(row[i+6], row[i+7]))
		}
		h := bits.RotateLeft64(h0, 1) + bits.RotateLeft64(h1, 7) + bits.RotateLeft64(h2, 12) + bits.RotateLeft64(h3, 18)
		for ; i+1 < len(row); i += 2 {
			h = round(h, pair(row[i], row[i+1]))
		}
		if i < len(row) {
			h = round(h, uint64(math.Float32bits(row[i]))|1<<63)
		}
		sum += fmix(h)
	}
	return fmix(fmix(sum^uint64(e.Rows)) ^ uint64(e.Cols)*prime1)
}

// pair packs two float32 values' bits into one word.
func pair(a, b float32) uint64 {
	return uint64(math.Float32bits(a)) | uint64(math.Float32bits(b))<<32
}

// round is xxHash64's accumulator round.
func round(h, k uint64) uint64 {
	h += k * prime2
	h = bits.RotateLeft64(h, 31)
	return h * prime1
}

// RowsHash is a hash of a set of row IDs invariant to their order: the
// sum of their finalised values, mixed with their count.
func RowsHash(rows []int) uint64 {
	var sum uint64
	for _, r := range rows {
		sum += fmix(uint64(r) + prime3)
	}
	return fmix(sum ^ uint64(len(rows))*prime2)
}
