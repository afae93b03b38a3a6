package metrics

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
	pairs []scoredLabel
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
// It runs in O(n log n) (one sort). A NaN score sorts below every number
// and ties with other NaN scores. It panics when labels or a non-nil mask
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
	p := sc.pairs[:0]
	for i, s := range scores {
		if mask != nil && !mask[i] {
			continue
		}
		p = append(p, scoredLabel{s: s, pos: labels[i] != 0})
	}
	sc.pairs = p
	slices.SortFunc(p, func(a, b scoredLabel) int { return cmp.Compare(a.s, b.s) })

	// twiceU counts 2 per correctly ordered (positive, negative) pair and
	// 1 per tie, so it stays an exact integer.
	var twiceU, negBelow, nPos, nNeg int64
	for i := 0; i < len(p); {
		var gPos, gNeg int64
		j := i
		for ; j < len(p) && cmp.Compare(p[j].s, p[i].s) == 0; j++ {
			if p[j].pos {
				gPos++
			} else {
				gNeg++
			}
		}
		twiceU += gPos * (2*negBelow + gNeg)
		negBelow += gNeg
		nPos += gPos
		nNeg += gNeg
		i = j
	}
	if nPos == 0 || nNeg == 0 {
		return math.NaN(), int(nPos), int(nNeg), false
	}
	return float64(twiceU) / (2 * float64(nPos) * float64(nNeg)), int(nPos), int(nNeg), true
}
