package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQuantileUpperRankByBruteForce checks the ranks against a brute
// force with exact integer binomial coefficients (Python's math.comb:
// the smallest k with Σ_{j<k} C(n,j)·0.95^j·0.05^(n−j) ≥ 0.95), and the
// minimum count against 1 − 0.95^58 = 0.9490 < 0.95 ≤ 1 − 0.95^59 = 0.9515.
func TestQuantileUpperRankByBruteForce(t *testing.T) {
	for _, tc := range []struct {
		n, want int
		ok      bool
	}{{1, 0, false}, {58, 0, false}, {59, 59, true}, {60, 60, true}, {100, 99, true}, {220, 215, true}, {400, 388, true}, {1000, 962, true}} {
		k, ok := QuantileUpperRank(tc.n, 0.95, 0.95)
		if k != tc.want || ok != tc.ok {
			t.Errorf("QuantileUpperRank(%d, 0.95, 0.95) = %d, %v, want %d, %v", tc.n, k, ok, tc.want, tc.ok)
		}
	}
	if got := MinQuantileBoundCount(0.95, 0.95); got != 59 {
		t.Errorf("MinQuantileBoundCount(0.95, 0.95) = %d, want 59", got)
	}
	// The median at 50% from 1 draw: P(X ≥ median) = ½ ≥ ½.
	if got := MinQuantileBoundCount(0.5, 0.5); got != 1 {
		t.Errorf("MinQuantileBoundCount(0.5, 0.5) = %d, want 1", got)
	}
	for _, bad := range [][3]float64{{0, 0.95, 0.95}, {10, 0, 0.95}, {10, 1, 0.95}, {10, 0.95, 1}, {10, math.NaN(), 0.95}} {
		if _, ok := QuantileUpperRank(int(bad[0]), bad[1], bad[2]); ok {
			t.Errorf("QuantileUpperRank%v: ok, want refused", bad)
		}
	}
}

// TestQuantileUpperRankCoverage draws uniform samples, whose 95% quantile
// is 0.95 exactly, and checks that the bound covers it in at least 95% of
// 4,000 repetitions (minus three binomial standard errors), and in fewer
// when one rank lower is taken (the rank is the smallest that covers).
func TestQuantileUpperRankCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const reps = 4000
	for _, n := range []int{59, 220} {
		k, _ := QuantileUpperRank(n, 0.95, 0.95)
		x := make([]float64, n)
		var covered, coveredBelow int
		for range reps {
			for i := range x {
				x[i] = rng.Float64()
			}
			slices.Sort(x)
			if x[k-1] >= 0.95 {
				covered++
			}
			if k >= 2 && x[k-2] >= 0.95 {
				coveredBelow++
			}
		}
		se := math.Sqrt(0.95 * 0.05 / reps)
		if c := float64(covered) / reps; c < 0.95-3*se {
			t.Errorf("n=%d: rank %d covers the 95%% quantile in %.3f of draws, want ≥ 0.95", n, k, c)
		}
		if n == 220 {
			if c := float64(coveredBelow) / reps; c >= 0.95 {
				t.Errorf("n=%d: rank %d already covers in %.3f of draws: %d is not the smallest", n, k-1, c, k)
			}
		}
	}
}

// TestLeakSummaryUpperBound: 100 batches with |AUC − ½| = i/200, i = 0…99: the bound is the 99th smallest (rank 99 of 100), the q95 the
// 95th; with 58 batches the bound is undefined (NaN, null in JSON).
func TestLeakSummaryUpperBound(t *testing.T) {
	for _, tc := range []struct {
		n         int
		wantRank  int
		wantQ95At int
	}{{100, 99, 95}, {58, 0, 56}} {
		l := NewLeak()
		for i := range tc.n {
			l.Add("norm", "cut", 0.5+float64(i)/(2*float64(tc.n)), 1, 1, true)
		}
		s := l.Summary("norm", "cut")
		rank := func(r int) float64 { return float64(r-1) / (2 * float64(tc.n)) }
		if math.Abs(s.Q95Abs-rank(tc.wantQ95At)) > 1e-12 {
			t.Errorf("n=%d: q95_abs %v, want %v", tc.n, s.Q95Abs, rank(tc.wantQ95At))
		}
		switch {
		case tc.wantRank == 0 && s.Q95AbsUpper != 0.5:
			t.Errorf("n=%d: bound %v, want ½, the bound that always holds (fewer than 59 batches)", tc.n, s.Q95AbsUpper)
		case tc.wantRank > 0 && math.Abs(s.Q95AbsUpper-rank(tc.wantRank)) > 1e-12:
			t.Errorf("n=%d: bound %v, want %v", tc.n, s.Q95AbsUpper, rank(tc.wantRank))
		}
	}
}
