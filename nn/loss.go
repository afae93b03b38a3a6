package nn

import (
	"fmt"
	"math"
)

// SigmoidBCE returns the mean binary cross-entropy of σ(logits) against
// labels, and writes its gradient with respect to the logits into dLogits:
// (σ(ℓ_i) − y_i)/B. Labels are usually 0 or 1 but any value in [0, 1]
// (a soft label) is accepted. Each term is computed in float64 in the
// stable form max(ℓ,0) − ℓ·y + log(1 + e^−|ℓ|), which neither overflows
// nor loses the loss of a confidently wrong prediction.
// All three slices must have the same non-zero length; a non-finite logit
// or a label outside [0, 1] is an error naming its index.
func SigmoidBCE(logits, labels, dLogits []float32) (float64, error) {
	n := len(logits)
	if n == 0 || len(labels) != n || len(dLogits) != n {
		return 0, fmt.Errorf("nn: SigmoidBCE given %d logits, %d labels and %d gradient slots", n, len(labels), len(dLogits))
	}
	inv := 1 / float64(n)
	var loss float64
	for i, l32 := range logits {
		l, y := float64(l32), float64(labels[i])
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return 0, fmt.Errorf("nn: SigmoidBCE: logit %d is %v", i, l32)
		}
		if !(y >= 0 && y <= 1) {
			return 0, fmt.Errorf("nn: SigmoidBCE: label %d is %v, outside [0, 1]", i, labels[i])
		}
		e := math.Exp(-math.Abs(l))
		loss += math.Max(l, 0) - l*y + math.Log1p(e)
		// σ(l) from e = exp(−|l|) without overflow.
		p := 1 / (1 + e)
		if l < 0 {
			p = e / (1 + e)
		}
		dLogits[i] = float32((p - y) * inv)
	}
	return loss * inv, nil
}

// Sigmoid writes σ(x) = 1/(1+e^−x) of every logit into dst (same length),
// computed without overflow.
func Sigmoid(dst, logits []float32) {
	dst = dst[:len(logits)]
	for i, l := range logits {
		e := math.Exp(-math.Abs(float64(l)))
		if l >= 0 {
			dst[i] = float32(1 / (1 + e))
		} else {
			dst[i] = float32(e / (1 + e))
		}
	}
}
