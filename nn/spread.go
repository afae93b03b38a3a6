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
//
// A pass too large for a core's cache (at least 4·fineGrain elements on
// two cores or more) is cut into up to four parts per core of at least
// fineGrain elements, which the cores claim in turn (internal/par): a
// core that another process holds up then takes fewer of them instead of
// keeping the others waiting, and no part's data was in a particular
// core's cache anyway. A smaller pass keeps one part per core, whose
// data the same core's part of the product before it just wrote.
func spreadParts(n int) int {
	procs := runtime.GOMAXPROCS(0)
	parts := min(procs, n/spreadGrain)
	if procs > 1 && n >= 4*fineGrain {
		parts = max(parts, min(4*procs, n/fineGrain))
	}
	return parts
}

// fineGrain is the fewest elements of a part of a pass cut finer than one
// part per core: 512 KiB of float32.
const fineGrain = 1 << 17

// cut is the start of part p of n elements in parts parts, rounded down
// to a multiple of 16 (n for p == parts).
func cut(n, parts, p int) int {
	if p >= parts {
		return n
	}
	return n * p / parts &^ 15
}

// spreadRows runs fn over the rows [0, rows) of a rows×width pass, cut
// into contiguous row ranges the way spread cuts rows·width elements (at
// most one part a row). A pass that treats each row on its own (an
// image's pooling, its patches) gives the same result however the rows
// are cut.
func spreadRows(rows, width int, fn func(r0, r1 int)) {
	parts := spreadRowParts(rows, width)
	if parts < 2 {
		fn(0, rows)
		return
	}
	par.Do(parts, func(p int) {
		if r0, r1 := rows*p/parts, rows*(p+1)/parts; r0 < r1 {
			fn(r0, r1)
		}
	})
}

// spreadRowParts is how many parts spreadRows cuts a rows×width pass
// into (below 2: it runs fn on all rows in turn). A hot caller checks it
// first, as with spreadParts, so that on one core it builds no closure.
func spreadRowParts(rows, width int) int { return min(spreadParts(rows*width), rows) }
