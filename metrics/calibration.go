package metrics

import (
	"fmt"
	"math"
)

// BCEClip is the clipping applied to probabilities by [BCE]: p is taken
// as min(max(p, BCEClip), 1−BCEClip), so a confident mistake costs at most
// −ln(1e-7) ≈ 16.1 nats instead of +Inf. It is the epsilon Keras uses.
const BCEClip = 1e-7

// BCE returns the mean binary cross-entropy (natural log) of the predicted
// probabilities of the positive class against the labels:
// mean_i −[y_i ln p_i + (1−y_i) ln(1−p_i)], with p clipped by [BCEClip].
// labels[i] != 0 is positive. It is the loss alone: no regulariser is
// included. It returns an error when the lengths differ, the input is
// empty, or a probability is NaN or outside [0, 1].
func BCE(probs []float64, labels []uint8) (float64, error) {
	if err := checkProbs("BCE", probs, labels); err != nil {
		return math.NaN(), err
	}
	var sum float64
	for i, p := range probs {
		p = min(max(p, BCEClip), 1-BCEClip)
		if labels[i] != 0 {
			sum -= math.Log(p)
		} else {
			sum -= math.Log1p(-p)
		}
	}
	return sum / float64(len(probs)), nil
}

// ACE is [Scratch.ACE] with a fresh scratch.
func ACE(probs []float64, labels []uint8, bins int) (float64, error) {
	var sc Scratch
	return sc.ACE(probs, labels, bins)
}

// ACE returns the adaptive calibration error (Nixon et al. 2019) of the
// predicted probabilities of the positive class, with R = bins
// equal-mass bins: the n examples are sorted by probability (a stable
// sort, so tied probabilities keep their input order), cut into R'
// = min(R, n) consecutive bins, and ACE is the mean over the bins of
// |observed positive rate − mean predicted probability| within the bin.
//
// When n = q·R' + r with 0 ≤ r < R', the first r bins (lowest
// probabilities) hold q+1 examples and the other R'−r hold q, so bin
// sizes differ by at most one (numpy.array_split's rule). labels[i] != 0
// is positive. It returns an error when the lengths differ, the input is
// empty, bins < 1, or a probability is NaN or outside [0, 1].
func (sc *Scratch) ACE(probs []float64, labels []uint8, bins int) (float64, error) {
	if bins < 1 {
		return math.NaN(), fmt.Errorf("metrics: ACE with %d bins, need at least 1", bins)
	}
	if err := checkProbs("ACE", probs, labels); err != nil {
		return math.NaN(), err
	}
	p := sc.pairs[:0]
	for i, v := range probs {
		p = append(p, scoredLabel{s: v, pos: labels[i] != 0})
	}
	sc.pairs = p
	sc.sortPairs()
	p = sc.pairs

	n := len(p)
	r := min(bins, n)
	q, extra := n/r, n%r
	var total float64
	start := 0
	for b := range r {
		size := q
		if b < extra {
			size++
		}
		var sumP float64
		var nPos int
		for _, e := range p[start : start+size] {
			sumP += e.s
			if e.pos {
				nPos++
			}
		}
		total += math.Abs(float64(nPos)/float64(size) - sumP/float64(size))
		start += size
	}
	return total / float64(r), nil
}

func checkProbs(what string, probs []float64, labels []uint8) error {
	if len(probs) != len(labels) {
		return fmt.Errorf("metrics: %s of %d probabilities with %d labels", what, len(probs), len(labels))
	}
	if len(probs) == 0 {
		return fmt.Errorf("metrics: %s of no examples", what)
	}
	for i, v := range probs {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("metrics: %s: probability %v at index %d outside [0, 1]", what, v, i)
		}
	}
	return nil
}
