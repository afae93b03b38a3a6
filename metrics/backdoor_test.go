package metrics

import (
	"math/rand/v2"
	"testing"
)

// TestAttackSuccessRateByCount checks the rate against a count of the
// rows by hand and by brute force on random rows, for both targets.
func TestAttackSuccessRateByCount(t *testing.T) {
	// Rows not of class 1: logits -1, 2, 0 → predicted 0, 1, 0: one of three.
	rate, rows, err := AttackSuccessRate([]float32{-1, 2, 0, 5}, []uint8{0, 0, 0, 1}, 1)
	if err != nil || rows != 3 || rate != 1.0/3 {
		t.Errorf("target 1: %g over %d (%v), want 1/3 over 3", rate, rows, err)
	}
	// Rows not of class 0: logit 5 (predicted 1): none predicted 0.
	rate, rows, _ = AttackSuccessRate([]float32{-1, 2, 0, 5}, []uint8{0, 0, 0, 1}, 0)
	if rows != 1 || rate != 0 {
		t.Errorf("target 0: %g over %d, want 0 over 1", rate, rows)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	logits, labels := make([]float32, 500), make([]uint8, 500)
	for i := range logits {
		logits[i], labels[i] = float32(rng.NormFloat64()), uint8(rng.IntN(2))
	}
	for _, target := range []uint8{0, 1} {
		hit, n := 0, 0
		for i := range logits {
			if labels[i] != target {
				n++
				if (logits[i] > 0) == (target == 1) {
					hit++
				}
			}
		}
		rate, rows, _ := AttackSuccessRate(logits, labels, target)
		if rows != n || rate != float64(hit)/float64(n) {
			t.Errorf("target %d: %g over %d, want %d/%d", target, rate, rows, hit, n)
		}
	}
	if _, _, err := AttackSuccessRate([]float32{1}, []uint8{0, 1}, 1); err == nil {
		t.Error("lengths differ: no error")
	}
	if _, _, err := AttackSuccessRate([]float32{1}, []uint8{0}, 2); err == nil {
		t.Error("target 2: no error")
	}
}
