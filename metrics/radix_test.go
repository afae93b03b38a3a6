package metrics

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortMatchesSlicesSort checks radixSort against slices.Sort on
// keys of every kind: distinct, heavily tied, all equal, sharing their
// top bytes, spread over every byte, and with the keys of NaN, ±0 and
// ±Inf scores.
func TestRadixSortMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// A slice, not a map: the cases draw from one generator in a fixed
	// order, so that a failure repeats.
	gens := []struct {
		name string
		gen  func() uint64
	}{
		{"uniform", rng.Uint64},
		{"tied", func() uint64 { return uint64(rng.IntN(5)) << 40 }},
		{"equal", func() uint64 { return 12345 }},
		{"prob", func() uint64 { return sortKey(rng.Float64()) }},
		{"normal", func() uint64 { return sortKey(rng.NormFloat64()) }},
		{"lowbyte", func() uint64 { return 0xabcd<<48 | uint64(rng.IntN(256)) }},
		{"specials", func() uint64 {
			return sortKey([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1}[rng.IntN(7)])
		}},
	}
	for _, g := range gens {
		name, gen := g.name, g.gen
		for _, n := range []int{1, 2, 3, 255, 256, 257, radixMin - 1, radixMin, 5000} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = gen()
			}
			want := slices.Clone(a)
			slices.Sort(want)
			got := radixSort(a, make([]uint64, n))
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %d keys: radixSort differs from slices.Sort", name, n)
			}
			var sc Scratch
			keys := slices.Clone(want)
			rng.Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			sc.sortKeys(&keys)
			if !slices.Equal(keys, want) {
				t.Fatalf("%s, %d keys: sortKeys differs from slices.Sort", name, n)
			}
		}
	}
}

// TestAUCLargeMatchesPairs checks the AUC of splits large enough for the
// radix sort against the count over every (positive, negative) pair, on
// scores with ties, NaNs and signed zeros, and reuses one scratch so that
// its swapped buffers are exercised.
func TestAUCLargeMatchesPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	var sc Scratch
	for _, n := range []int{radixMin + 1, 3 * radixMin, 9000} {
		for round := range 3 {
			scores := make([]float64, n)
			labels := make([]uint8, n)
			for i := range scores {
				switch rng.IntN(10) {
				case 0:
					scores[i] = math.NaN()
				case 1:
					scores[i] = math.Copysign(0, -1)
				case 2:
					scores[i] = 0
				case 3:
					scores[i] = float64(rng.IntN(3)) // ties
				default:
					scores[i] = rng.NormFloat64()
				}
				if rng.IntN(3) == 0 {
					labels[i] = 1
				}
			}
			var twice, pairs float64
			for i := range n {
				if labels[i] == 0 {
					continue
				}
				for j := range n {
					if labels[j] != 0 {
						continue
					}
					pairs++
					a, b := scores[i], scores[j]
					switch {
					case a != a && b != b, a == b:
						twice++
					case b != b, a > b:
						twice += 2
					}
				}
			}
			want := twice / (2 * pairs)
			got, ok := sc.AUC(scores, labels, nil)
			if !ok || math.Abs(got-want) > 1e-12 {
				t.Fatalf("%d rows, round %d: AUC %v (ok %v), want %v", n, round, got, ok, want)
			}
		}
	}
}

// TestSortPairsMatchesStableSort checks sortPairs against
// slices.SortStableFunc by cmp.Compare on pairs whose scores tie often
// (probabilities rounded from float32, a few values, ±0, NaN, ±Inf), so
// that stability shows: the labels of tied scores must come out in
// their input order.
func TestSortPairsMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 2))
	gens := []struct {
		name string
		gen  func() float64
	}{
		{"float32", func() float64 { return float64(float32(rng.Float64())) }},
		{"few", func() float64 { return float64(rng.IntN(4)) / 4 }},
		{"specials", func() float64 {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0.5}[rng.IntN(6)]
		}},
		{"normal", rng.NormFloat64},
	}
	var sc Scratch
	for _, g := range gens {
		name, gen := g.name, g.gen
		for _, n := range []int{1, 100, radixMin - 1, radixMin, 7000} {
			sc.pairs = sc.pairs[:0]
			for range n {
				sc.pairs = append(sc.pairs, scoredLabel{s: gen(), pos: rng.IntN(2) == 0})
			}
			want := slices.Clone(sc.pairs)
			slices.SortStableFunc(want, func(a, b scoredLabel) int { return cmp.Compare(a.s, b.s) })
			sc.sortPairs()
			for i := range want {
				if g, w := sc.pairs[i], want[i]; math.Float64bits(g.s) != math.Float64bits(w.s) || g.pos != w.pos {
					t.Fatalf("%s, %d pairs: at %d got %v, want %v", name, n, i, g, w)
				}
			}
		}
	}
}
