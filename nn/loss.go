package nn

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/splitguard/splitguard/internal/par"
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
	// Each row's term goes to its own slot, and the terms are summed in
	// row order at the end: with the rows on several cores, the same
	// sum, bit for bit, as on one.
	tp := bceTerms.Get().(*[]float64)
	defer bceTerms.Put(tp)
	if cap(*tp) < n {
		*tp = make([]float64, n)
	}
	terms := (*tp)[:n]
	parts := min(runtime.GOMAXPROCS(0), n/bceGrain, maxBCEParts)
	if parts < 2 {
		if k := bceRows(logits, labels, dLogits, terms, inv); k >= 0 {
			return 0, bceError(k, logits, labels)
		}
	} else {
		var bad [maxBCEParts]int
		par.Do(parts, func(p int) {
			lo, hi := n*p/parts, n*(p+1)/parts
			bad[p] = bceRows(logits[lo:hi], labels[lo:hi], dLogits[lo:hi], terms[lo:hi], inv)
			if bad[p] >= 0 {
				bad[p] += lo
			}
		})
		for _, k := range bad[:parts] {
			if k >= 0 {
				return 0, bceError(k, logits, labels)
			}
		}
	}
	var loss float64
	for _, t := range terms {
		loss += t
	}
	return loss * inv, nil
}

// bceGrain is the fewest rows a part of SigmoidBCE gets (an exponential
// and a logarithm each: about 25 ns a row).
const bceGrain = 512

// maxBCEParts bounds the parts of SigmoidBCE.
const maxBCEParts = 64

// bceTerms keeps SigmoidBCE's buffers of per-row loss terms.
var bceTerms = sync.Pool{New: func() any { return new([]float64) }}

// bceRows writes the gradient of each row of logits into dLogits (scaled
// by inv) and its loss term into terms; it returns the first row with a
// non-finite logit or a label outside [0, 1] (it stops there), or −1.
func bceRows(logits, labels, dLogits []float32, terms []float64, inv float64) int {
	labels, dLogits, terms = labels[:len(logits)], dLogits[:len(logits)], terms[:len(logits)]
	for i, l32 := range logits {
		l, y := float64(l32), float64(labels[i])
		if math.IsNaN(l) || math.IsInf(l, 0) || !(y >= 0 && y <= 1) {
			return i
		}
		e := math.Exp(-math.Abs(l))
		terms[i] = math.Max(l, 0) - l*y + math.Log1p(e)
		// σ(l) from e = exp(−|l|) without overflow.
		p := 1 / (1 + e)
		if l < 0 {
			p = e / (1 + e)
		}
		dLogits[i] = float32((p - y) * inv)
	}
	return -1
}

// bceError is SigmoidBCE's error for row k, the first bad one.
func bceError(k int, logits, labels []float32) error {
	if l := float64(logits[k]); math.IsNaN(l) || math.IsInf(l, 0) {
		return fmt.Errorf("nn: SigmoidBCE: logit %d is %v", k, logits[k])
	}
	return fmt.Errorf("nn: SigmoidBCE: label %d is %v, outside [0, 1]", k, labels[k])
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
