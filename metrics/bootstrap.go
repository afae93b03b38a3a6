package metrics

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
)

// AUCInterval is a bootstrap confidence interval of an AUC.
type AUCInterval struct {
	// Lo and Hi bound the interval; Level is its coverage (0.95).
	Lo, Hi, Level float64
	// Replicates is the number of bootstrap samples behind it.
	Replicates int
}

// AUCBootstrap returns the stratified percentile bootstrap interval of
// the AUC of scores against labels at the given level (e.g. 0.95), from b
// replicates drawn with a PCG seeded by seed: each replicate resamples the
// positives among the positives and the negatives among the negatives,
// with replacement (so every replicate has both classes, in the same
// numbers), and the interval is the (1−level)/2 and (1+level)/2 quantiles
// (nearest rank) of the replicates' AUCs. NaN scores are refused; ties
// count ½ as in AUC.
//
// The scores are sorted once; a replicate is then one pass over them with
// the multiplicity of each row (no copy of the data): O(n log n + b·n).
func AUCBootstrap(scores []float64, labels []uint8, b int, level float64, seed uint64) (AUCInterval, error) {
	aucs, err := bootstrapAUCs(scores, labels, b, seed)
	if err != nil {
		return AUCInterval{}, err
	}
	if !(level > 0 && level < 1) {
		return AUCInterval{}, errors.New("metrics: bootstrap level outside (0, 1)")
	}
	slices.Sort(aucs)
	lo := aucs[NearestRank(len(aucs), (1-level)/2)]
	hi := aucs[NearestRank(len(aucs), (1+level)/2)]
	return AUCInterval{Lo: lo, Hi: hi, Level: level, Replicates: b}, nil
}

// bootstrapAUCs returns the b replicates' AUCs, in the order drawn.
func bootstrapAUCs(scores []float64, labels []uint8, b int, seed uint64) ([]float64, error) {
	if len(scores) != len(labels) {
		return nil, errors.New("metrics: bootstrap: scores and labels differ in length")
	}
	if b < 1 {
		return nil, errors.New("metrics: bootstrap: at least one replicate")
	}
	var pos, neg []int
	for i, y := range labels {
		if math.IsNaN(scores[i]) {
			return nil, errors.New("metrics: bootstrap: a NaN score")
		}
		if y == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	if len(pos) == 0 || len(neg) == 0 {
		return nil, errors.New("metrics: bootstrap: a single class")
	}
	// order: the rows by score; group[k] is the first position of the
	// tie group of order[k].
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(scores[i], scores[j]) })
	weight := make([]float64, len(scores))
	rng := rand.New(rand.NewPCG(seed, 0x626f6f7473747261)) // "bootstra"
	out := make([]float64, b)
	np, nn := float64(len(pos)), float64(len(neg))
	for r := range out {
		clear(weight)
		for range pos {
			weight[pos[rng.IntN(len(pos))]]++
		}
		for range neg {
			weight[neg[rng.IntN(len(neg))]]++
		}
		var num, negBelow float64
		for k := 0; k < len(order); {
			var pw, nw float64
			e := k
			for ; e < len(order) && scores[order[e]] == scores[order[k]]; e++ {
				if labels[order[e]] == 1 {
					pw += weight[order[e]]
				} else {
					nw += weight[order[e]]
				}
			}
			num += pw * (negBelow + nw/2)
			negBelow += nw
			k = e
		}
		out[r] = num / (np * nn)
	}
	return out, nil
}
