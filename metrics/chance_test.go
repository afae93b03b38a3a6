package metrics

import (
	"encoding/json"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// repeat returns c n times.
func repeat(c Composition, n int) []Composition {
	out := make([]Composition, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// TestChanceQ95AbsHand checks the chance floor against values derived by
// hand from the null distribution of U (the number of (positive,
// negative) pairs with the positive ranked higher; under the null every
// ranking is equally likely, so P(U = u) is the number of partitions of u
// into at most m parts of size ≤ n over C(m+n, m)). The answer is the
// smallest x with (1/N) Σ_b P(|A_b − ½| > x) ≤ 0.05.
func TestChanceQ95AbsHand(t *testing.T) {
	cache := map[[2]int][]float64{}
	for _, tc := range []struct {
		name  string
		comps []Composition
		want  float64
	}{
		// A ∈ {0, 1}: |A − ½| = ½ always; any x < ½ has tail 1.
		{"1x1", repeat(Composition{1, 1}, 1), 0.5},
		{"1x1 many", repeat(Composition{1, 1}, 7), 0.5},
		// A uniform on {0, ⅓, ⅔, 1}: |A − ½| is ½ or ⅙, each with
		// probability ½, so any x < ½ has tail ≥ ½ > 0.05.
		{"1x3", repeat(Composition{1, 3}, 1), 0.5},
		{"3x1", repeat(Composition{3, 1}, 1), 0.5},
		// 1 positive, 59 negatives: U uniform on 0…59, |A − ½| =
		// |2U − 59|/118 uniform on {1, 3, …, 59}/118 (1/30 each). Tail
		// above 57/118 is 1/30 ≤ 0.05, above 55/118 it is 2/30 > 0.05.
		{"1x59", repeat(Composition{1, 59}, 2), 57.0 / 118},
		{"59x1", repeat(Composition{59, 1}, 1), 57.0 / 118},
		// 1 positive, 39 negatives: the largest |A − ½| = ½ has
		// probability 2/40 = 0.05 exactly, which is ≤ 0.05: the answer
		// is the next value down, 37/78 (a tie decided by ≤, not by
		// rounding).
		{"1x39 tie", repeat(Composition{1, 39}, 1), 37.0 / 78},
		// 4×4: counts of U = 0…8 are 1 1 2 3 5 5 7 7 8 (symmetric,
		// total 70); |A − ½| = |U − 8|/16. P(|U − 8| ≥ 8) = 2/70 =
		// 0.0286, P(|U − 8| ≥ 7) = 4/70 = 0.0571: answer 7/16.
		{"4x4", repeat(Composition{4, 4}, 1), 7.0 / 16},
		// 5×5: counts of U = 0…12 are 1 1 2 3 5 7 9 11 14 16 18 19 20
		// (total 252); |A − ½| = |U − 12.5|/25. Tails: ≥ 10.5: 8/252 =
		// 0.0317, ≥ 9.5: 14/252 = 0.0556: answer 9.5/25.
		{"5x5", repeat(Composition{5, 5}, 1), 9.5 / 25},
		// Mixture 3×(4,4) + 1×(5,5). Tail of (4,4): 4/70 on [6/16, 7/16),
		// 2/70 on [7/16, ½); of (5,5): 8/252 on [9.5/25, 10.5/25),
		// 4/252 on [10.5/25, 11.5/25). On [0.38, 0.42): (3·4/70 +
		// 8/252)/4 = 0.0508 > 0.05; on [0.42, 0.4375): (3·4/70 +
		// 4/252)/4 = 0.0468 ≤ 0.05: answer 10.5/25 = 0.42, neither
		// component's own value.
		{"3x(4,4)+(5,5)", append(repeat(Composition{4, 4}, 3), Composition{5, 5}), 10.5 / 25},
		// Mixture 1×(5,5) + 1×(4,4): on [0.375, 0.38): (4/70 +
		// 14/252)/2 = 0.0563 > 0.05; on [0.38, 0.42): (4/70 + 8/252)/2 =
		// 0.0444: answer 0.38.
		{"(5,5)+(4,4)", []Composition{{5, 5}, {4, 4}}, 0.38},
		// 99×(4,4) + 1×(1,1): on [7/16, ½): (99·2/70 + 1)/100 = 0.0383;
		// on [6/16, 7/16): (99·4/70 + 1)/100 = 0.0666: answer 7/16.
		{"99x(4,4)+(1,1)", append(repeat(Composition{4, 4}, 99), Composition{1, 1}), 7.0 / 16},
	} {
		if got := chanceQ95Abs(tc.comps, nil, cache); !near(got, tc.want, 1e-8) {
			t.Errorf("%s: chance q95 |AUC−½| = %.10f, want %.10f", tc.name, got, tc.want)
		}
	}
	if got := chanceQ95Abs(nil, nil, cache); !math.IsNaN(got) {
		t.Errorf("no batch: %v, want NaN", got)
	}
	// Weights: (1,1) with weight 0 drops out.
	if got := chanceQ95Abs([]Composition{{4, 4}, {1, 1}}, []float64{1, 0}, cache); !near(got, 7.0/16, 1e-8) {
		t.Errorf("weighted: %v, want 7/16", got)
	}
}

// bruteNullPMF enumerates every ranking of m positives and n negatives
// (positions 0…m+n−1 from lowest to highest score, positives at the set
// bits) and tallies U, the pairs with the positive above the negative.
func bruteNullPMF(m, n int) []float64 {
	pmf := make([]float64, m*n+1)
	var total float64
	for mask := uint(0); mask < 1<<(m+n); mask++ {
		if bits.OnesCount(mask) != m {
			continue
		}
		u, negBelow := 0, 0
		for p := 0; p < m+n; p++ {
			if mask&(1<<p) != 0 {
				u += negBelow
			} else {
				negBelow++
			}
		}
		pmf[u]++
		total++
	}
	for i := range pmf {
		pmf[i] /= total
	}
	return pmf
}

// TestNullPMFBruteForce checks the recurrence and the Gaussian-binomial
// product against enumeration of all C(m+n, m) rankings.
func TestNullPMFBruteForce(t *testing.T) {
	for m := 1; m <= 6; m++ {
		for n := 1; n <= 7; n++ {
			want := bruteNullPMF(m, n)
			for name, got := range map[string][]float64{"recurrence": nullPMFRecurrence(m, n), "product": nullPMFProduct(m, n)} {
				if len(got) != len(want) {
					t.Fatalf("%s(%d, %d): %d values, want %d", name, m, n, len(got), len(want))
				}
				for u := range want {
					if !near(got[u], want[u], 1e-14) {
						t.Errorf("%s(%d, %d): P(U=%d) = %v, want %v", name, m, n, u, got[u], want[u])
					}
				}
			}
		}
	}
}

// TestNullPMFLarge checks the two exact algorithms against each other
// where enumeration is out of reach, and the product (the path for very
// unbalanced compositions) against closed forms: U is uniform on 0…n for
// one positive, and for two positives P(U = u) = #{0 ≤ a ≤ b ≤ n : a+b =
// u} / C(n+2, 2).
func TestNullPMFLarge(t *testing.T) {
	for _, c := range [][2]int{{10, 10}, {10, 118}, {7, 900}, {3, 1500}} {
		r, p := nullPMFRecurrence(c[0], c[1]), nullPMFProduct(c[0], c[1])
		var sum float64
		for u := range r {
			sum += r[u]
			if !near(r[u], p[u], 1e-14) || r[u] != r[len(r)-1-u] && !near(r[u], r[len(r)-1-u], 1e-15) {
				t.Fatalf("(%d, %d): P(U=%d) recurrence %v, product %v, mirror %v", c[0], c[1], u, r[u], p[u], r[len(r)-1-u])
			}
		}
		if !near(sum, 1, 1e-12) {
			t.Errorf("(%d, %d): total probability %v", c[0], c[1], sum)
		}
	}
	const n = 200000
	p := nullPMFProduct(1, n)
	for u, v := range p {
		if !near(v, 1.0/(n+1), 1e-17) {
			t.Fatalf("product(1, %d): P(U=%d) = %v, want %v", n, u, v, 1.0/(n+1))
		}
	}
	const n2 = 30000
	p = nullPMFProduct(2, n2)
	pairs := float64(n2+2) * float64(n2+1) / 2
	for u, v := range p {
		// a ≤ b, a + b = u, b ≤ n2: a from max(0, u−n2) to ⌊u/2⌋.
		want := float64(u/2-max(0, u-n2)+1) / pairs
		if !near(v, want, 1e-15) {
			t.Fatalf("product(2, %d): P(U=%d) = %v, want %v", n2, u, v, want)
		}
	}
	// Above the recurrence's budget nullLowerCDF takes the product.
	cdf := nullLowerCDF(1, n)
	if len(cdf) != n/2+1 || !near(cdf[len(cdf)-1], float64(n/2+1)/(n+1), 1e-12) {
		t.Errorf("nullLowerCDF(1, %d): %d values ending %v", n, len(cdf), cdf[len(cdf)-1])
	}
	if got, want := chanceQ95Abs([]Composition{{1, n}}, nil, nil), 0.475; !near(got, want, 1e-5) {
		// |A − ½| ≈ uniform on [0, ½]: 95% quantile 0.475.
		t.Errorf("chance for (1, %d) = %v, want ≈ %v", n, got, want)
	}
}

// mcChance draws trials batches (composition draw() each, skipped when
// it has one class), scores them with label-independent uniform scores,
// computes each AUC with the package's AUC, and returns the nearest-rank
// 95% quantile of |AUC − ½| and the compositions drawn.
func mcChance(t *testing.T, r *rand.Rand, trials int, draw func() Composition) (float64, []Composition) {
	t.Helper()
	var dev []float64
	var comps []Composition
	var sc Scratch
	var scores []float64
	var labels []uint8
	for range trials {
		c := draw()
		n := c.Pos + c.Neg
		scores, labels = scores[:0], labels[:0]
		for i := range n {
			scores = append(scores, r.Float64())
			labels = append(labels, uint8(min(1, max(0, c.Pos-i)))) // first Pos rows positive
		}
		auc, ok := sc.AUC(scores, labels, nil)
		if !ok {
			continue
		}
		dev = append(dev, math.Abs(auc-0.5))
		comps = append(comps, c)
	}
	q, err := Quantile(dev, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	return q, comps
}

// TestChanceQ95AbsMonteCarlo checks the chance floor against a seeded
// simulation: label-blind scores, AUCs from the package's AUC (an
// independent path), the empirical 95% quantile of |AUC − ½|.
//
// Tolerance: the empirical 95% quantile of T draws has standard error
// se = √(0.05·0.95/T) / f(q), f the density of |A − ½| at q; for the
// normal branch f(q) = 2φ(1.96)/sd (sd = √((n1+n0+1)/(12·n1·n0))). With
// T = 20000: (13,115): sd 0.0848, se 0.0011; (256,768): sd 0.0208,
// se 0.0003. The normal approximation itself is off by about 5e-4 at
// (13,115) (kurtosis −0.09 moves the 95% point by ≈ 0.006 sd) and the
// AUC's grid is 1/1495. We allow 5 se + 0.001: 0.0066 and 0.0025, well
// inside the 0.01 a user would notice. The binomial mixture (128 rows at
// 10% positives, most batches on the exact branch) has a density at q
// comparable to (13,115)'s and gets the same tolerance; -short uses
// fewer trials and scales se accordingly.
func TestChanceQ95AbsMonteCarlo(t *testing.T) {
	trials := 20000
	if testing.Short() {
		trials = 5000
	}
	phi196 := math.Exp(-1.96*1.96/2) / math.Sqrt(2*math.Pi)
	se := func(sd float64) float64 { return math.Sqrt(0.05*0.95/float64(trials)) / (2 * phi196 / sd) }
	for i, c := range []Composition{{13, 115}, {256, 768}} {
		r := rand.New(rand.NewPCG(uint64(i+1), 77))
		mc, _ := mcChance(t, r, trials, func() Composition { return c })
		sd := math.Sqrt(float64(c.Pos+c.Neg+1) / (12 * float64(c.Pos) * float64(c.Neg)))
		got := chanceQ95Abs([]Composition{c}, nil, nil)
		tol := 5*se(sd) + 0.001
		if !near(got, mc, tol) {
			t.Errorf("%v: chance %v, Monte Carlo %v (tolerance %v)", c, got, mc, tol)
		}
		// The normal branch in closed form: 1.959964·sd.
		if !near(got, 1.959963984540054*sd, 1e-8) {
			t.Errorf("%v: chance %v, want 1.96·sd = %v", c, got, 1.959963984540054*sd)
		}
		t.Logf("%v: chance %.5f, Monte Carlo %.5f over %d", c, got, mc, trials)
	}

	// Batches of 128 rows, positives Binomial(128, 0.1): the mixture of
	// the compositions actually drawn, against the simulation.
	r := rand.New(rand.NewPCG(3, 77))
	mc, comps := mcChance(t, r, trials, func() Composition {
		k := 0
		for range 128 {
			if r.Float64() < 0.1 {
				k++
			}
		}
		return Composition{k, 128 - k}
	})
	got := chanceQ95Abs(comps, nil, map[[2]int][]float64{})
	tol := 5*se(0.0848) + 0.001
	if !near(got, mc, tol) {
		t.Errorf("binomial 128×0.1: chance %v, Monte Carlo %v (tolerance %v)", got, mc, tol)
	}
	t.Logf("binomial 128×0.1: chance %.5f, Monte Carlo %.5f over %d", got, mc, len(comps))
}

// TestLeakObserveCounts checks that Observe records the scored positives
// and negatives (after the mask) and that one-class batches are skipped
// without a composition.
func TestLeakObserveCounts(t *testing.T) {
	l := NewLeak()
	type batch struct {
		scores []float64
		labels []uint8
		mask   []bool
	}
	for _, b := range []batch{
		// rows 0 and 2 are hints (not scored): 1 positive, 5 negatives
		{[]float64{9, 1, 8, 2, 3, 4, 5, 6}, []uint8{1, 0, 1, 0, 0, 1, 0, 0}, []bool{false, true, false, true, true, true, true, true}},
		// the mask leaves no positive: skipped
		{[]float64{1, 2, 3, 4}, []uint8{1, 1, 0, 0}, []bool{false, false, true, true}},
		// no positive at all: skipped
		{[]float64{1, 2, 3}, []uint8{0, 0, 0}, nil},
		// no mask: 1 positive, 3 negatives
		{[]float64{4, 3, 2, 1}, []uint8{1, 0, 0, 0}, nil},
		// all positive: skipped
		{[]float64{4, 3}, []uint8{1, 1}, nil},
		// 2 positives, 3 negatives with ties
		{[]float64{1, 1, 1, 2, 0}, []uint8{1, 0, 1, 0, 0}, []bool{true, true, true, true, true}},
	} {
		auc, ok := l.Observe("hint1_distance", "cut", b.scores, b.labels, b.mask)
		want, wantOK := AUC(b.scores, b.labels, b.mask)
		if ok != wantOK || ok && auc != want {
			t.Errorf("Observe = %v, %v; AUC = %v, %v", auc, ok, want, wantOK)
		}
	}
	wantComps := []Composition{{1, 5}, {1, 3}, {2, 3}}
	if got := l.Compositions("hint1_distance", "cut"); !slices.Equal(got, wantComps) {
		t.Errorf("compositions %v, want %v", got, wantComps)
	}
	if got := l.Series("hint1_distance", "cut"); len(got) != 3 {
		t.Errorf("series %v, want 3 AUCs", got)
	}
	s := l.Summary("hint1_distance", "cut")
	if s.Batches != 3 || s.Skipped != 3 {
		t.Errorf("summary %+v, want 3 batches and 3 skipped", s)
	}
	// (1,5) and (1,3) each put probability ≥ ⅓ on |A − ½| = ½: the
	// mixture's tail below ½ is ≥ (⅓ + ½ + 0)/3 > 0.05.
	if !near(s.ChanceQ95Abs, 0.5, 1e-8) {
		t.Errorf("chance %v, want ½", s.ChanceQ95Abs)
	}
	if l.Compositions("norm", "cut") != nil {
		t.Error("compositions of an unknown series")
	}
	defer func() {
		if recover() == nil {
			t.Error("Add of a defined AUC without negatives did not panic")
		}
	}()
	l.Add("norm", "cut", 0.7, 3, 0, true)
}

// TestLeakChanceCache checks that Summary computes and caches the exact
// null distribution per (min, max) composition once and that the JSON
// field is null exactly when no batch has a defined AUC.
func TestLeakChanceCache(t *testing.T) {
	l := NewLeak()
	for range 5 {
		l.Add("norm", "cut", 0.6, 4, 4, true)
		l.Add("norm", "first", 0.4, 4, 4, true)
		l.Add("spectral", "cut", 0.5, 20, 100, true)
	}
	l.Add("cosine", "cut", 0, 0, 0, false)
	sums := l.Summaries()
	if len(l.null) != 1 || l.null[[2]int{4, 4}] == nil {
		t.Errorf("cache holds %d entries, want only (4, 4)", len(l.null))
	}
	if !near(sums["norm/cut"].ChanceQ95Abs, 7.0/16, 1e-8) || sums["norm/first"].ChanceQ95Abs != sums["norm/cut"].ChanceQ95Abs {
		t.Errorf("chance %v, %v, want 7/16", sums["norm/cut"].ChanceQ95Abs, sums["norm/first"].ChanceQ95Abs)
	}
	b, err := json.Marshal(sums)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if v, ok := raw["cosine/cut"]["chance_q95_abs"]; !ok || v != nil {
		t.Errorf("all-skipped series: chance_q95_abs = %v (present %v), want null: %s", v, ok, b)
	}
	if v, ok := raw["spectral/cut"]["chance_q95_abs"].(float64); !ok || !near(v, sums["spectral/cut"].ChanceQ95Abs, 1e-15) {
		t.Errorf("spectral/cut: chance_q95_abs = %v: %s", raw["spectral/cut"]["chance_q95_abs"], b)
	}
	var back map[string]LeakSummary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["norm/cut"].ChanceQ95Abs != sums["norm/cut"].ChanceQ95Abs || !math.IsNaN(back["cosine/cut"].ChanceQ95Abs) {
		t.Errorf("round trip: %+v", back)
	}
	if s := NewLeak().Summary("x", "y"); !math.IsNaN(s.ChanceQ95Abs) {
		t.Errorf("unknown series: chance %v, want NaN", s.ChanceQ95Abs)
	}
}
