package attack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/tensor"
)

// KMeansMaxIter bounds the Lloyd iterations of [KMeans].
const KMeansMaxIter = 100

// KMeans clusters the rows of x into k clusters and writes each row's
// cluster (0…k−1) into assign (len x.Rows). Seeding is k-means++ drawn
// from rng (the first centre uniform, each next one with probability
// proportional to the squared distance to the nearest centre chosen so
// far), so the result is deterministic for a seeded rng. Lloyd
// iterations follow until no assignment changes or KMeansMaxIter rounds;
// a cluster left empty takes the row farthest from its current centre.
// Distances are accumulated in float64. It returns an error when k is
// outside [1, x.Rows], assign has the wrong length or x is not finite.
func KMeans(x *tensor.Matrix, k int, rng *rand.Rand, assign []int) error {
	n, d := x.Rows, x.Cols
	if k < 1 || k > n {
		return fmt.Errorf("attack: k-means with k=%d on %d rows", k, n)
	}
	if len(assign) != n {
		return fmt.Errorf("attack: k-means on %d rows with %d assignment slots", n, len(assign))
	}
	if err := tensor.CheckFinite("attack: k-means input", x); err != nil {
		return err
	}
	cent := make([]float64, k*d)
	dist := make([]float64, n) // squared distance to the nearest chosen centre
	setCentre := func(c, row int) {
		for j, v := range x.Row(row) {
			cent[c*d+j] = float64(v)
		}
	}
	sqTo := func(row, c int) float64 {
		var s float64
		ct := cent[c*d : (c+1)*d]
		for j, v := range x.Row(row) {
			e := float64(v) - ct[j]
			s += e * e
		}
		return s
	}

	setCentre(0, rng.IntN(n))
	for i := range n {
		dist[i] = sqTo(i, 0)
	}
	for c := 1; c < k; c++ {
		var total float64
		for _, v := range dist {
			total += v
		}
		pick := -1
		if total > 0 {
			t := rng.Float64() * total
			for i, v := range dist {
				t -= v
				if t < 0 && v > 0 {
					pick = i
					break
				}
			}
			if pick < 0 { // rounding left t ≥ 0: take the last row with weight
				for i := n - 1; i >= 0; i-- {
					if dist[i] > 0 {
						pick = i
						break
					}
				}
			}
		} else {
			pick = rng.IntN(n) // every row coincides with a centre
		}
		setCentre(c, pick)
		for i := range n {
			dist[i] = min(dist[i], sqTo(i, c))
		}
	}

	counts := make([]int, k)
	fill(assign, -1)
	for range KMeansMaxIter {
		changed := false
		for i := range n {
			best, bd := 0, math.Inf(1)
			for c := range k {
				if dd := sqTo(i, c); dd < bd {
					best, bd = c, dd
				}
			}
			dist[i] = bd
			if assign[i] != best {
				assign[i], changed = best, true
			}
		}
		if !changed {
			break
		}
		clear(cent)
		clear(counts)
		for i := range n {
			c := assign[i]
			counts[c]++
			for j, v := range x.Row(i) {
				cent[c*d+j] += float64(v)
			}
		}
		for c := range k {
			if counts[c] == 0 {
				far := 0
				for i := range n {
					if dist[i] > dist[far] {
						far = i
					}
				}
				setCentre(c, far)
				dist[far] = 0
				continue
			}
			for j := range d {
				cent[c*d+j] /= float64(counts[c])
			}
		}
	}
	return nil
}

// MultiClassAccuracy is the multi-class form of the embedding attack
// (METHODS §3, [Sun22] Appendix E): it clusters the rows of e with [KMeans]
// into k clusters, k the number of distinct values in labels, gives the
// largest cluster the most frequent class, the second largest the second
// most frequent, and so on (ties: the lower cluster index, the lower
// label value first), and returns the share of rows whose cluster's class
// is their label. It works for any number of classes ≥ 1, binary
// included. It returns an error when len(labels) ≠ e.Rows, the batch is
// empty or KMeans fails.
func MultiClassAccuracy(e *tensor.Matrix, labels []uint8, rng *rand.Rand) (float64, error) {
	n := e.Rows
	if len(labels) != n {
		return math.NaN(), fmt.Errorf("attack: multi-class attack on %d rows with %d labels", n, len(labels))
	}
	if n == 0 {
		return math.NaN(), fmt.Errorf("attack: multi-class attack on an empty batch")
	}
	var classCount [256]int
	for _, y := range labels {
		classCount[y]++
	}
	var classes []int
	for c, cnt := range classCount {
		if cnt > 0 {
			classes = append(classes, c)
		}
	}
	k := len(classes)
	assign := make([]int, n)
	if err := KMeans(e, k, rng, assign); err != nil {
		return math.NaN(), err
	}
	size := make([]int, k)
	for _, c := range assign {
		size[c]++
	}
	clusters := make([]int, k)
	for i := range clusters {
		clusters[i] = i
	}
	slices.SortStableFunc(clusters, func(a, b int) int { return size[b] - size[a] })
	slices.SortStableFunc(classes, func(a, b int) int { return classCount[b] - classCount[a] })
	classOf := make([]int, k)
	for r, c := range clusters {
		classOf[c] = classes[r]
	}
	correct := 0
	for i, c := range assign {
		if classOf[c] == int(labels[i]) {
			correct++
		}
	}
	return float64(correct) / float64(n), nil
}
