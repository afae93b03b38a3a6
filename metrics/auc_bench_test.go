package metrics

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAUC times the AUC of one audited batch (1,024 rows, distinct
// scores, a quarter positive) and of one evaluation split (20,000 rows).
func BenchmarkAUC(b *testing.B) {
	for _, n := range []int{1024, 20000} {
		r := rand.New(rand.NewPCG(1, 2))
		scores := make([]float64, n)
		labels := make([]uint8, n)
		for i := range n {
			scores[i] = r.NormFloat64()
			if r.IntN(4) == 0 {
				labels[i] = 1
			}
		}
		var sc Scratch
		b.Run(map[int]string{1024: "batch", 20000: "split"}[n], func(b *testing.B) {
			for b.Loop() {
				sc.AUC(scores, labels, nil)
			}
		})
	}
}

// BenchmarkACE times the calibration error of one evaluation split
// (20,000 probabilities rounded from float32, as the active party's).
func BenchmarkACE(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	probs := make([]float64, 20000)
	labels := make([]uint8, len(probs))
	for i := range probs {
		probs[i] = float64(float32(r.Float64()))
		if r.IntN(4) == 0 {
			labels[i] = 1
		}
	}
	var sc Scratch
	for b.Loop() {
		if _, err := sc.ACE(probs, labels, 15); err != nil {
			b.Fatal(err)
		}
	}
}
