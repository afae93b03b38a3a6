package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAUCStdErrByHand checks Hanley and McNeil's standard error on values
// worked by hand: A = 0.9 with 27 positives and 199 negatives (a
// validation split of 226 rows at 12% positives): Q1 = 0.9/1.1 =
// 0.818182, Q2 = 1.62/1.9 = 0.852632, SE² = (0.09 + 26·0.0081818 +
// 198·0.0426316)/5373 = 8.74378/5373 = 0.00162735, SE = 0.040340; A = ½
// with 1 and 1 row:
// SE² = ¼, SE = ½; and NaN without a class.
func TestAUCStdErrByHand(t *testing.T) {
	for _, tc := range []struct {
		a        float64
		pos, neg int
		want     float64
	}{
		{0.9, 27, 199, 0.040340},
		{0.5, 1, 1, 0.5},
		{1, 10, 10, 0},
	} {
		if got := AUCStdErr(tc.a, tc.pos, tc.neg); math.Abs(got-tc.want) > 5e-6 {
			t.Errorf("AUCStdErr(%g, %d, %d) = %.6f, want %.6f", tc.a, tc.pos, tc.neg, got, tc.want)
		}
	}
	for _, bad := range [][3]float64{{0.8, 0, 5}, {0.8, 5, 0}, {1.2, 5, 5}, {math.NaN(), 5, 5}} {
		if got := AUCStdErr(bad[0], int(bad[1]), int(bad[2])); !math.IsNaN(got) {
			t.Errorf("AUCStdErr(%v) = %v, want NaN", bad, got)
		}
	}
}

// TestAUCStdErrMonteCarlo checks the closed form against the spread of
// the exact AUC over simulated validation splits where it is exact:
// negatives' scores Exp(1), positives' Exp(μ) with μ = 1/A − 1, so that
// P(positive > negative) = 1/(1+μ) = A. 20,000 splits of 8 positives and
// 30 negatives; the sample standard deviation's own relative error is
// about 1/√(2·20000) = 0.5%, so 3% is a loose bound.
func TestAUCStdErrMonteCarlo(t *testing.T) {
	if testing.Short() {
		t.Skip("Monte Carlo")
	}
	const pos, neg, reps = 8, 30, 20000
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range []float64{0.7, 0.9} {
		mu := 1/a - 1
		scores, labels := make([]float64, pos+neg), make([]uint8, pos+neg)
		var s, s2 float64
		for range reps {
			for i := range pos + neg {
				labels[i] = 0
				scores[i] = rng.ExpFloat64()
				if i < pos {
					labels[i] = 1
					scores[i] = rng.ExpFloat64() / mu
				}
			}
			auc, ok := AUC(scores, labels, nil)
			if !ok {
				t.Fatal("AUC undefined")
			}
			s += auc
			s2 += auc * auc
		}
		m := s / reps
		sd := math.Sqrt((s2/reps - m*m) * reps / (reps - 1))
		if got := AUCStdErr(a, pos, neg); math.Abs(got-sd)/sd > 0.03 {
			t.Errorf("A = %g: closed form %.5f, simulated %.5f (mean AUC %.4f)", a, got, sd, m)
		}
	}
}
