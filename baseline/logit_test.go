package baseline

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLogitFourSums checks logit against the order its comment gives,
// computed here term by term: the term at position t (the categorical
// columns, then the numeric ones) goes to partial sum t mod 4, and the
// result is b + ((s0+s1) + (s2+s3)). Every bit must agree, for every
// count of columns modulo 4 and with ids that have no weight.
func TestLogitFourSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for numCat := range 11 {
		for numDense := range 11 {
			const rows, weights = 7, 50
			d := &design{numCat: numCat, numDense: numDense, p: weights + numDense}
			w := make([]float64, d.p)
			for k := range w {
				w[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(7)-3))
			}
			cat := make([]int32, rows*numCat)
			for k := range cat {
				cat[k] = int32(rng.IntN(weights+10)) - 10 // negative: no weight
			}
			dense := make([]float64, rows*numDense)
			for k := range dense {
				dense[k] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2))
			}
			b := rng.NormFloat64()
			for i := range rows {
				var s [4]float64
				pos := 0
				for j := range numCat {
					if c := cat[i*numCat+j]; c >= 0 {
						s[pos%4] += w[c]
					}
					pos++
				}
				for k := range numDense {
					s[pos%4] += w[weights+k] * dense[i*numDense+k]
					pos++
				}
				want := b + ((s[0] + s[1]) + (s[2] + s[3]))
				if got := d.logit(w, b, cat, dense, i); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%d categorical, %d numeric columns, row %d: logit %v, want %v", numCat, numDense, i, got, want)
				}
			}
		}
	}
}
