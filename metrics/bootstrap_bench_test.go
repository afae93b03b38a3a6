package metrics

import (
	"math/rand/v2"
	"testing"
)

// benchScores are 20,000 scores (rounded, so some tie) and labels, about
// a quarter positive: the size of a default 200,000-row run's test split.
func benchScores() (a, b []float64, y []uint8) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 20000
	a, b, y = make([]float64, n), make([]float64, n), make([]uint8, n)
	for i := range n {
		if rng.Float64() < 0.25 {
			y[i] = 1
		}
		a[i] = float64(int((rng.NormFloat64()+float64(y[i]))*1e4)) / 1e4
		b[i] = float64(int((rng.NormFloat64()+0.8*float64(y[i]))*1e4)) / 1e4
	}
	return a, b, y
}

// BenchmarkAUCBootstrap is one summary's test_auc_selected_ci95: 1,000
// replicates of 20,000 rows.
func BenchmarkAUCBootstrap(b *testing.B) {
	s, _, y := benchScores()
	for b.Loop() {
		if _, err := AUCBootstrap(s, y, 1000, 0.95, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAUCDiffBootstrap is one summary's
// test_auc_minus_baseline_ci95: 1,000 paired replicates of 20,000 rows.
func BenchmarkAUCDiffBootstrap(b *testing.B) {
	s, t, y := benchScores()
	for b.Loop() {
		if _, err := AUCDiffBootstrap(s, t, y, 1000, 0.95, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAUCAndDiffBootstrap is both of a summary's intervals from one
// set of replicates.
func BenchmarkAUCAndDiffBootstrap(b *testing.B) {
	s, t, y := benchScores()
	for b.Loop() {
		if _, _, err := AUCAndDiffBootstrap(s, t, y, 1000, 0.95, 1); err != nil {
			b.Fatal(err)
		}
	}
}
