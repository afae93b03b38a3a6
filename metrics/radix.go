package metrics

import (
	"cmp"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
)

// radixMin is the fewest keys sortKeys sorts by radix. Below it a
// comparison sort is as fast or faster (an audited batch's 256 or 768
// keys: the radix passes' fixed cost outweighs the saved comparisons);
// at an evaluation split's 20,000 keys the radix sort takes about a
// tenth of the time.
const radixMin = 2048

// sortKeys sorts *keys ascending. From radixMin keys on it sorts them
// by their bytes, least significant first, through sc.tmp, and may
// swap the two buffers: *keys then holds the sorted keys in what was
// sc.tmp's storage. Sorted integers have one order, so the result is
// the same as slices.Sort's.
func (sc *Scratch) sortKeys(keys *[]uint64) {
	k := *keys
	if len(k) < radixMin {
		slices.Sort(k)
		return
	}
	sc.tmp = buf.Grow(sc.tmp, len(k))
	if out := radixSort(k, sc.tmp); &out[0] != &k[0] {
		*keys, sc.tmp = out, k
	}
}

// radixSort sorts a ascending with tmp (as long as a) as the other
// buffer of each pass, and returns the one that holds the result. Each
// of the eight passes is a stable counting sort by one byte; a pass
// whose byte is the same in every key changes nothing and is skipped
// (scores of one sign and magnitude share their top bytes).
func radixSort(a, tmp []uint64) []uint64 {
	n := len(a)
	if n == 0 {
		return a
	}
	var counts [8][256]uint32
	for _, k := range a {
		counts[0][byte(k)]++
		counts[1][byte(k>>8)]++
		counts[2][byte(k>>16)]++
		counts[3][byte(k>>24)]++
		counts[4][byte(k>>32)]++
		counts[5][byte(k>>40)]++
		counts[6][byte(k>>48)]++
		counts[7][byte(k>>56)]++
	}
	src, dst := a, tmp[:n]
	for p := range counts {
		c := &counts[p]
		shift := uint(8 * p)
		if c[byte(src[0]>>shift)] == uint32(n) {
			continue
		}
		var sum uint32
		for i, v := range c {
			c[i], sum = sum, sum+v
		}
		for _, k := range src {
			d := byte(k >> shift)
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	return src
}

// sortPairs sorts sc.pairs by score, stably (tied scores keep their
// order), in the order cmp.Compare gives the scores (sortKey). From
// radixMin pairs on it sorts them by their keys' bytes, least
// significant first, through sc.tmpPairs, swapping the two buffers
// when the result lies there; a stable sort has one result, so it is
// the same as slices.SortStableFunc's.
func (sc *Scratch) sortPairs() {
	p := sc.pairs
	if len(p) < radixMin {
		slices.SortStableFunc(p, func(a, b scoredLabel) int { return cmp.Compare(a.s, b.s) })
		return
	}
	sc.tmpPairs = buf.Grow(sc.tmpPairs, len(p))
	if out := radixSortPairs(p, sc.tmpPairs); &out[0] != &p[0] {
		sc.pairs, sc.tmpPairs = out, p
	}
}

// radixSortPairs is radixSort for pairs by sortKey of their scores: a
// stable sort, which returns the buffer (p or tmp) holding the result.
// It is a copy rather than one generic sort taking the key as a function:
// Go calls such a function per key without inlining it, and the generic
// version took 1.8 times as long (BenchmarkAUC/split 250 → 457 µs,
// BenchmarkACE 258 → 419–447 µs, 2026-11-27).
func radixSortPairs(p, tmp []scoredLabel) []scoredLabel {
	n := len(p)
	if n == 0 {
		return p
	}
	var counts [8][256]uint32
	for _, e := range p {
		k := sortKey(e.s)
		for b := range counts {
			counts[b][byte(k>>(8*b))]++
		}
	}
	src, dst := p, tmp[:n]
	for b := range counts {
		c := &counts[b]
		shift := uint(8 * b)
		if c[byte(sortKey(src[0].s)>>shift)] == uint32(n) {
			continue
		}
		var sum uint32
		for i, v := range c {
			c[i], sum = sum, sum+v
		}
		for _, e := range src {
			d := byte(sortKey(e.s) >> shift)
			dst[c[d]] = e
			c[d]++
		}
		src, dst = dst, src
	}
	return src
}
