package metrics

import (
	"cmp"
	"math"
	"slices"
)

// The chance floor of the leak summary ([LeakSummary.ChanceQ95Abs]): the
// 95% quantile of |AUC − ½| that a scoring function independent of the
// labels would give over the batches of a series.

const (
	// chanceTail is the tail probability of the chance quantile (1 − 0.95).
	chanceTail = 0.05
	// chanceTieTol absorbs rounding when the mixture's tail probability
	// equals chanceTail exactly (e.g. 2/40 for one positive and 39
	// negatives): such a tail counts as ≤ 0.05.
	chanceTieTol = 1e-12
	// chanceXTol is the bisection's final bracket width on x.
	chanceXTol = 1e-10
	// exactNullMaxMin is the largest min(n1, n0) whose null distribution
	// is computed exactly; above it the normal approximation is used.
	exactNullMaxMin = 10
	// recurrenceBudget bounds the work (multiply-adds, about
	// m(m+1)/2 · n(n+1)/2) of the rolling recurrence; compositions beyond
	// it (a handful of positives among tens of thousands of rows, e.g. an
	// epoch-memory attack on data with very few positives) get the same
	// exact distribution from the Gaussian-binomial product, O(m²·n).
	recurrenceBudget = 5e7
)

// Composition is the number of scored positives and negatives of one
// batch of a leak series.
type Composition struct {
	Pos, Neg int
}

// nullKey orders a composition as (min, max): U of (m positives, n
// negatives) and of (n, m) have the same null distribution.
func nullKey(c Composition) [2]int {
	return [2]int{min(c.Pos, c.Neg), max(c.Pos, c.Neg)}
}

// nullPMFRecurrence returns P(U = u), u = 0…m·n, for the Mann–Whitney U
// (pairs with the positive ranked higher) of m positives and n negatives
// ranked uniformly at random (continuous scores, no ties), by the
// recurrence on the top-ranked element:
//
//	P_{i,j}(u) = i/(i+j)·P_{i−1,j}(u−j) + j/(i+j)·P_{i,j−1}(u),
//
// with P_{0,j} and P_{i,0} all mass at 0. It keeps one array per i ≤ m
// and rolls them over j = 1…n; m should be the smaller count.
func nullPMFRecurrence(m, n int) []float64 {
	rows := make([][]float64, m+1)
	for i := range rows {
		rows[i] = make([]float64, i*n+1)
		rows[i][0] = 1 // P_{i,0}
	}
	for j := 1; j <= n; j++ {
		// rows[0] stays P_{0,j}; rows[i−1] already holds P_{i−1,j} when
		// rows[i] (still P_{i,j−1}) is updated, from the top down so
		// that rows[i][u] is read before it is written.
		for i := 1; i <= m; i++ {
			a := float64(i) / float64(i+j)
			b := float64(j) / float64(i+j)
			cur, prev := rows[i], rows[i-1]
			oldTop, prevTop := i*(j-1), (i-1)*j
			for u := i * j; u >= 0; u-- {
				var v float64
				if u <= oldTop {
					v = b * cur[u]
				}
				if u >= j && u-j <= prevTop {
					v += a * prev[u-j]
				}
				cur[u] = v
			}
		}
	}
	return rows[m]
}

// nullPMFProduct returns the same distribution as [nullPMFRecurrence]
// from the generating function of U, the Gaussian binomial
// [m+n choose m]_q = Π_{i=1..m} (1 − q^{n+i}) / (1 − q^i), scaled to
// probabilities: step i turns P_{i−1,n} into P_{i,n} by a division by
// (1 − q^i) (a stride-i running sum), a product with (1 − q^{n+i}) and
// the factor i/(n+i) = C(n+i−1, i−1)/C(n+i, i). O(m²·n) instead of the
// recurrence's O(m²·n²); the subtractions lose at most a few ulps of
// probability 1, and the tiny negative values they can leave are set to 0.
func nullPMFProduct(m, n int) []float64 {
	g := make([]float64, m*n+1)
	t := make([]float64, m*n+1)
	g[0] = 1
	for i := 1; i <= m; i++ {
		top := i * n
		for u := 0; u <= top; u++ {
			t[u] = g[u] // g is 0 above (i−1)·n
			if u >= i {
				t[u] += t[u-i]
			}
		}
		c := float64(i) / float64(n+i)
		for u := 0; u <= top; u++ {
			v := t[u]
			if u >= n+i {
				v -= t[u-n-i]
			}
			g[u] = max(v, 0) * c
		}
	}
	return g
}

// nullLowerCDF returns P(U ≤ u) for u = 0…⌊m·n/2⌋ under the null
// hypothesis, exactly, for m ≤ n (m ≥ 1). The distribution is symmetric
// about m·n/2, so the lower half is all that is needed.
func nullLowerCDF(m, n int) []float64 {
	var pmf []float64
	if float64(m)*float64(m+1)/2*float64(n)*float64(n+1)/2 <= recurrenceBudget {
		pmf = nullPMFRecurrence(m, n)
	} else {
		pmf = nullPMFProduct(m, n)
	}
	cdf := make([]float64, m*n/2+1) // a copy: the upper half is let go
	var s float64
	for u := range cdf {
		s += pmf[u]
		cdf[u] = s
	}
	return cdf
}

// chanceComponent is one composition of a series with its weight.
type chanceComponent struct {
	c Composition
	w float64
	// exact: cdf is P(U ≤ u) for u ≤ ⌊mn/2⌋ and mn = n1·n0; otherwise
	// cdf is nil and sd is the null standard deviation of the AUC.
	cdf []float64
	mn  float64
	sd  float64
}

// tail returns P(|A − ½| > x) for x ≥ 0 under the null hypothesis.
func (k *chanceComponent) tail(x float64) float64 {
	if k.cdf == nil {
		return math.Erfc(x / (k.sd * math.Sqrt2))
	}
	// |U/mn − ½| > x ⇔ U < mn(½ − x) or U > mn(½ + x); the two sides are
	// disjoint for x ≥ 0 and equally likely by symmetry.
	i := int(math.Ceil(k.mn*(0.5-x))) - 1 // largest integer u < mn(½ − x)
	if i < 0 {
		return 0
	}
	return 2 * k.cdf[min(i, len(k.cdf)-1)]
}

// chanceQ95Abs returns the x ≥ 0 at which the mixture of the null
// distributions of |A − ½| over comps, composition i weighted by
// weights[i] (nil: weight 1 each), has tail probability 0.05: the
// smallest x with (Σ wᵢ P(|Aᵢ − ½| > x)) / Σ wᵢ ≤ 0.05, found by
// bisection to within chanceXTol. Compositions must have Pos, Neg ≥ 1;
// the exact null distributions are cached in cache (keyed by [nullKey]).
// It returns NaN when comps is empty or the weights sum to 0.
func chanceQ95Abs(comps []Composition, weights []float64, cache map[[2]int][]float64) float64 {
	byComp := map[Composition]float64{}
	var total float64
	for i, c := range comps {
		w := 1.0
		if weights != nil {
			w = weights[i]
		}
		if w > 0 {
			byComp[c] += w
			total += w
		}
	}
	if !(total > 0) {
		return math.NaN()
	}
	ks := make([]chanceComponent, 0, len(byComp))
	for c, w := range byComp {
		k := chanceComponent{c: c, w: w / total, mn: float64(c.Pos) * float64(c.Neg)}
		if key := nullKey(c); key[0] <= exactNullMaxMin {
			cdf, ok := cache[key]
			if !ok {
				cdf = nullLowerCDF(key[0], key[1])
				if cache != nil {
					cache[key] = cdf
				}
			}
			k.cdf = cdf
		} else {
			k.sd = math.Sqrt(float64(c.Pos+c.Neg+1) / (12 * k.mn))
		}
		ks = append(ks, k)
	}
	// A fixed order makes the sum, hence the result, reproducible.
	slices.SortFunc(ks, func(a, b chanceComponent) int {
		return cmp.Or(cmp.Compare(a.c.Pos, b.c.Pos), cmp.Compare(a.c.Neg, b.c.Neg))
	})
	within := func(x float64) bool { // tail at x ≤ 0.05
		var f float64
		for i := range ks {
			f += ks[i].w * ks[i].tail(x)
		}
		return f <= chanceTail+chanceTieTol
	}
	lo, hi := 0.0, 0.5
	if within(lo) {
		return 0
	}
	// |A − ½| ≤ ½, so hi = ½ always holds for exact components; a normal
	// component (min(n1, n0) > 10, sd < 0.13) has tail < 1e-4 there.
	for !within(hi) {
		lo, hi = hi, 2*hi
	}
	for hi-lo > chanceXTol {
		mid := lo + (hi-lo)/2
		if within(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// ChanceQ95Abs returns the chance floor of [LeakSummary.ChanceQ95Abs] for
// batches of the given compositions: the 95% quantile of |AUC − ½| that
// scores independent of the labels give over them (exact null
// distribution when min(n1, n0) ≤ 10, the normal approximation with the
// exact null variance otherwise). Every composition must have Pos and Neg
// ≥ 1. It returns NaN for no compositions.
func ChanceQ95Abs(comps []Composition) float64 {
	for _, c := range comps {
		if c.Pos < 1 || c.Neg < 1 {
			panic("metrics: ChanceQ95Abs of a batch without positives or negatives")
		}
	}
	return chanceQ95Abs(comps, nil, map[[2]int][]float64{})
}
