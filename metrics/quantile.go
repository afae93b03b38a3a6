package metrics

import (
	"fmt"
	"math"
	"slices"
)

// NearestRank returns the 1-based rank that the nearest-rank q-quantile
// of n values picks: ⌈q·n⌉, and 1 when that is 0 (q = 0 picks the
// minimum). q·n is computed in floating point, so a product within 1e-9
// (relative) of an integer is taken as that integer: 0.95·20 is rank 19,
// not 20. It panics unless 0 ≤ q ≤ 1 and n ≥ 1.
func NearestRank(n int, q float64) int {
	if n < 1 {
		panic(fmt.Sprintf("metrics: nearest rank among %d values", n))
	}
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("metrics: quantile level %v outside [0, 1]", q))
	}
	r := q * float64(n)
	if rr := math.Round(r); math.Abs(r-rr) <= 1e-9*math.Max(1, r) {
		r = rr
	}
	return min(max(int(math.Ceil(r)), 1), n)
}

// Quantile returns the nearest-rank q-quantile of x: the ⌈q·n⌉-th
// smallest of its n values (the smallest when q·n = 0), as defined by
// [NearestRank]. It is always one of the values of x; no interpolation.
// x is not modified (a sorted copy is made). It returns an error when x is
// empty, holds a NaN, or q is outside [0, 1].
func Quantile(x []float64, q float64) (float64, error) {
	if err := checkQuantileArgs(x, q); err != nil {
		return math.NaN(), err
	}
	s := slices.Clone(x)
	slices.Sort(s)
	return s[NearestRank(len(s), q)-1], nil
}

// QuantileSorted is [Quantile] for x already sorted ascending; it
// allocates nothing and does not check the order.
func QuantileSorted(x []float64, q float64) (float64, error) {
	if err := checkQuantileArgs(x, q); err != nil {
		return math.NaN(), err
	}
	return x[NearestRank(len(x), q)-1], nil
}

func checkQuantileArgs(x []float64, q float64) error {
	if !(q >= 0 && q <= 1) {
		return fmt.Errorf("metrics: quantile level %v outside [0, 1]", q)
	}
	if len(x) == 0 {
		return fmt.Errorf("metrics: quantile of an empty series")
	}
	for i, v := range x {
		if math.IsNaN(v) {
			return fmt.Errorf("metrics: quantile of a series with NaN at index %d", i)
		}
	}
	return nil
}
