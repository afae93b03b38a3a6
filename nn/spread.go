package nn

import (
	"runtime"

	"github.com/splitguard/splitguard/internal/par"
)

// spreadGrain is the fewest elements an element-wise pass hands to one
// part: about 10 µs of a ReLU pass, well above what internal/par's hand-off
// costs.
const spreadGrain = 1 << 15

// spread runs fn over [0, n) cut into contiguous ranges, one per part, on
// up to GOMAXPROCS goroutines when n is large enough to pay for it. The
// cuts fall on multiples of 16 elements (whole cache lines of float32), so
// that two parts never write the same line. An element-wise pass gives
// the same result whichever way it is cut.
func spread(n int, fn func(lo, hi int)) {
	parts := spreadParts(n)
	if parts < 2 {
		fn(0, n)
		return
	}
	par.Do(parts, func(p int) {
		lo, hi := cut(n, parts, p), cut(n, parts, p+1)
		if lo < hi {
			fn(lo, hi)
		}
	})
}

// spreadParts is how many parts spread cuts n elements into (below 2: it
// runs them in turn). A hot caller checks it first, so that on one core it
// does not build the closure spread takes (a heap allocation per call).
func spreadParts(n int) int { return min(runtime.GOMAXPROCS(0), n/spreadGrain) }

// cut is the start of part p of n elements in parts parts, rounded down
// to a multiple of 16 (n for p == parts).
func cut(n, parts, p int) int {
	if p >= parts {
		return n
	}
	return n * p / parts &^ 15
}
