package metrics

import "math"

// QuantileUpperRank returns the rank k (1-based) of the order statistic
// X_(k) of n independent draws of a continuous distribution that is an
// upper confidence bound at level conf for the distribution's q-quantile
// ξ: the smallest k with
//
//	P(X_(k) ≥ ξ) = P(Binomial(n, q) ≤ k−1) ≥ conf,
//
// since X_(k) < ξ exactly when k or more draws fall below ξ, each with
// chance q. The bound is distribution-free. ok is false when no rank
// reaches conf — when even the largest draw falls short, 1 − qⁿ < conf,
// i.e. n < MinQuantileBoundCount(q, conf) — or for arguments outside
// n ≥ 1, q in (0, 1), conf in (0, 1).
func QuantileUpperRank(n int, q, conf float64) (k int, ok bool) {
	if n < 1 || !(q > 0 && q < 1) || !(conf > 0 && conf < 1) {
		return 0, false
	}
	alpha := 1 - conf
	// tail is P(Binomial(n, q) ≥ j), summed from j = n down; the answer
	// is the smallest j with tail ≤ alpha.
	lq, lp := math.Log(q), math.Log1p(-q)
	lgn, _ := math.Lgamma(float64(n) + 1)
	tail := 0.0
	for j := n; j >= 1; j-- {
		lgj, _ := math.Lgamma(float64(j) + 1)
		lgr, _ := math.Lgamma(float64(n-j) + 1)
		tail += math.Exp(lgn - lgj - lgr + float64(j)*lq + float64(n-j)*lp)
		if tail > alpha*(1+1e-12) {
			if j == n {
				return 0, false
			}
			return j + 1, true
		}
	}
	return 1, true
}

// MinQuantileBoundCount is the fewest draws from which an order statistic
// bounds the q-quantile from above at level conf
// ([QuantileUpperRank]): the smallest n with 1 − qⁿ ≥ conf, 59 for the
// 95% quantile at 95%.
func MinQuantileBoundCount(q, conf float64) int {
	if !(q > 0 && q < 1) || !(conf > 0 && conf < 1) {
		return 0
	}
	n := int(math.Ceil(math.Log(1-conf) / math.Log(q)))
	for n > 1 && 1-math.Pow(q, float64(n-1)) >= conf {
		n--
	}
	for 1-math.Pow(q, float64(n)) < conf {
		n++
	}
	return n
}

// LeakBoundLevel is the confidence of LeakSummary.Q95AbsUpper.
const LeakBoundLevel = 0.95
