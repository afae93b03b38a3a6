package data

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestExactSumMean: the mean of values of every magnitude (subnormals,
// huge values that cancel, mixed signs) equals the exact rational mean
// rounded once, computed independently with big.Rat, and does not depend
// on the order of the values.
func TestExactSumMean(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	cases := map[string][]float64{
		"small":      {0.1, 0.2, 0.3},
		"one":        {-2.5},
		"zeros":      {0, math.Copysign(0, -1)},
		"cancel":     {1e308, 1, -1e308, math.MaxFloat64, -math.MaxFloat64},
		"subnormals": {5e-324, 5e-324, -1e-320, 2.2250738585072014e-308},
		"negative":   {-1.5, -2.25, -3e-10},
	}
	var mixed []float64
	for range 2000 {
		mixed = append(mixed, r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
	}
	cases["mixed"] = mixed
	for name, vs := range cases {
		exact := new(big.Rat)
		for _, v := range vs {
			exact.Add(exact, new(big.Rat).SetFloat64(v))
		}
		want, _ := exact.Quo(exact, new(big.Rat).SetInt64(int64(len(vs)))).Float64()
		for try := range 3 {
			var s exactSum
			for _, v := range vs {
				s.add(v)
			}
			if got := s.mean(int64(len(vs))); got != want {
				t.Errorf("%s (order %d): mean %v, want %v", name, try, got, want)
			}
			r.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
		}
	}
}
