package rundir

import (
	"math"
	"sort"
	"strings"
)

// headlineKey returns the leak key a progress line shows: the cut-layer
// key ("ATTACK/cut") of the attack of the best rank (rank, e.g.
// attack.Rank) when one of them is ranked (below math.MaxInt), else the
// first key in sorted order; "" for no key.
func headlineKey(keys []string, rank func(attack string) int) string {
	if len(keys) == 0 {
		return ""
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	best, bestRank := sorted[0], math.MaxInt
	for _, k := range sorted {
		if at, ok := strings.CutSuffix(k, "/cut"); ok {
			if r := rank(at); r < bestRank {
				best, bestRank = k, r
			}
		}
	}
	return best
}
