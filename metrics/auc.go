package metrics

import (
	"fmt"
	"math"
)

// scoredLabel is one scored row: its score (or predicted probability) and
// whether it is positive.
type scoredLabel struct {
	s   float64
	pos bool
}

// Scratch holds the buffers behind AUC and ACE so that per-batch calls
// allocate nothing once the buffers have grown to the batch size. The
// zero value is ready to use. A Scratch must not be used from two
// goroutines at once.
type Scratch struct {
	pairs    []scoredLabel
	pos, neg []uint64      // AUC's sort keys of the positives and the negatives
	tmp      []uint64      // the other buffer of a radix sort (sortKeys)
	tmpPairs []scoredLabel // the other buffer of sortPairs' radix sort
}

// AUC is [Scratch.AUC] with a fresh scratch.
func AUC(scores []float64, labels []uint8, mask []bool) (auc float64, ok bool) {
	var sc Scratch
	return sc.AUC(scores, labels, mask)
}

// AUC returns the exact ROC AUC of scores against labels (the
// Mann–Whitney statistic): over every (positive, negative) pair of scored
// rows, the share in which the positive has the higher score, a tie
// counting ½. Larger scores mean "more likely positive"; an AUC below 0.5
// is returned as it is (no flipping, METHODS §2).
//
// mask selects the scored rows (mask[i] false: row i is left out); a nil
// mask scores every row. labels[i] != 0 is positive. ok is false, and auc
// NaN, when the scored rows hold no positive or no negative: the AUC is
// undefined there and the caller counts the batch as skipped.
//
// It runs in O(n log n) (one sort; in linear time from radixMin scored
// rows of a class). A NaN score sorts below every number and ties with
// other NaN scores. It panics when labels or a non-nil mask
// differ in length from scores, which is a programming error.
func (sc *Scratch) AUC(scores []float64, labels []uint8, mask []bool) (auc float64, ok bool) {
	auc, _, _, ok = sc.aucCounts(scores, labels, mask)
	return auc, ok
}

// aucCounts is [Scratch.AUC] that also returns the numbers of scored
// positives and negatives (counted in the same pass).
func (sc *Scratch) aucCounts(scores []float64, labels []uint8, mask []bool) (auc float64, pos, neg int, ok bool) {
	if len(labels) != len(scores) {
		panic(fmt.Sprintf("metrics: AUC of %d scores with %d labels", len(scores), len(labels)))
	}
	if mask != nil && len(mask) != len(scores) {
		panic(fmt.Sprintf("metrics: AUC of %d scores with a mask of %d rows", len(scores), len(mask)))
	}
	// The positives' and the negatives' scores are sorted apart as
	// integer keys in the scores' order (sortKey), then merged: sorting
	// plain integers is several times faster than sorting (score, label)
	// records by a comparison function, and a large split's keys sort
	// by their bytes (sortKeys).
	ps, ns := sc.pos[:0], sc.neg[:0]
	for i, s := range scores {
		if mask != nil && !mask[i] {
			continue
		}
		if labels[i] != 0 {
			ps = append(ps, sortKey(s))
		} else {
			ns = append(ns, sortKey(s))
		}
	}
	sc.pos, sc.neg = ps, ns
	if len(ps) == 0 || len(ns) == 0 {
		return math.NaN(), len(ps), len(ns), false
	}
	sc.sortKeys(&sc.pos)
	sc.sortKeys(&sc.neg)
	ps, ns = sc.pos, sc.neg

	// twiceU counts 2 per correctly ordered (positive, negative) pair and
	// 1 per tie, so it stays an exact integer. Each group of positives
	// with one key meets the negatives below it and those equal to it.
	var twiceU, negBelow int64
	j := 0
	for i := 0; i < len(ps); {
		k := ps[i]
		gPos := int64(0)
		for ; i < len(ps) && ps[i] == k; i++ {
			gPos++
		}
		for ; j < len(ns) && ns[j] < k; j++ {
			negBelow++
		}
		gNeg := int64(0)
		for e := j; e < len(ns) && ns[e] == k; e++ {
			gNeg++
		}
		twiceU += gPos * (2*negBelow + gNeg)
	}
	nPos, nNeg := int64(len(ps)), int64(len(ns))
	return float64(twiceU) / (2 * float64(nPos) * float64(nNeg)), len(ps), len(ns), true
}

// sortKey maps a score to an integer in the order cmp.Compare gives the
// scores: every NaN to 0, below −∞, all NaNs tied; −0 and +0 to one key;
// otherwise the IEEE bits with the sign bit set for a positive number
// and every bit flipped for a negative one.
func sortKey(s float64) uint64 {
	if s != s {
		return 0
	}
	b := math.Float64bits(s)
	if b == 1<<63 { // −0
		b = 0
	}
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}
