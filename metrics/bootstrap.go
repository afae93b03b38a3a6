package metrics

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// AUCInterval is a bootstrap confidence interval of an AUC.
type AUCInterval struct {
	// Lo and Hi bound the interval; Level is its coverage (0.95).
	Lo, Hi, Level float64
	// Replicates is the number of bootstrap samples behind it.
	Replicates int
}

// AUCBootstrap returns the percentile interval of the AUC of scores
// against labels at the given level (e.g. 0.95) from b Poisson bootstrap
// replicates [Chamandy12]: each replicate gives every row an independent
// Poisson(1) weight — its number of copies in the resample, the limit of
// the classic multinomial draw of n rows with replacement — and computes
// the weighted AUC (ties ½, as AUC); the interval is the (1−level)/2 and
// (1+level)/2 quantiles (nearest rank) of the replicates' AUCs. Replicate
// r draws from a PCG seeded by (seed, r), so the result does not depend on
// how the replicates are spread over the cores. NaN scores are refused.
//
// The scores are sorted once; a replicate is one sequential pass over the
// sorted rows (no copy of the data, no random access): O(n log n + b·n),
// spread over GOMAXPROCS cores.
func AUCBootstrap(scores []float64, labels []uint8, b int, level float64, seed uint64) (AUCInterval, error) {
	s, err := newBootSample(scores, labels)
	if err != nil {
		return AUCInterval{}, err
	}
	return bootstrapInterval(b, level, func() func(r int) float64 {
		return func(r int) float64 { return s.replicate(seed, uint64(r)) }
	})
}

// bootstrapInterval computes reps replicates over the cores — newWorker
// gives each worker goroutine its function of the replicate's number (so
// a worker may hold scratch) — and returns the percentile interval of
// their values at level. A replicate valued NaN (its weights left a class
// empty: likely only on a handful of rows) is dropped.
func bootstrapInterval(reps int, level float64, newWorker func() func(r int) float64) (AUCInterval, error) {
	ivs, err := bootstrapIntervals(reps, level, 1, func() func(r int, out []float64) {
		f := newWorker()
		return func(r int, out []float64) { out[0] = f(r) }
	})
	if err != nil {
		return AUCInterval{}, err
	}
	return ivs[0], nil
}

// bootstrapIntervals is bootstrapInterval for replicates of n values
// each (a worker's function writes replicate r's into out): the n
// percentile intervals, each of its own values.
func bootstrapIntervals(reps int, level float64, n int, newWorker func() func(r int, out []float64)) ([]AUCInterval, error) {
	if !(level > 0 && level < 1) {
		return nil, errors.New("metrics: bootstrap level outside (0, 1)")
	}
	if reps < 1 {
		return nil, errors.New("metrics: bootstrap: at least one replicate")
	}
	vals := make([][]float64, n)
	for i := range vals {
		vals[i] = make([]float64, reps)
	}
	workers := min(runtime.GOMAXPROCS(0), reps)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			f := newWorker()
			out := make([]float64, n)
			for r := w; r < reps; r += workers {
				f(r, out)
				for i, v := range out {
					vals[i][r] = v
				}
			}
		})
	}
	wg.Wait()
	ivs := make([]AUCInterval, n)
	for i := range ivs {
		iv, err := percentileInterval(vals[i], reps, level)
		if err != nil {
			return nil, err
		}
		ivs[i] = iv
	}
	return ivs, nil
}

// percentileInterval is the interval of the replicates' values vals at
// level, their NaN dropped (it reorders vals).
func percentileInterval(vals []float64, reps int, level float64) (AUCInterval, error) {
	vals = slices.DeleteFunc(vals, math.IsNaN)
	if len(vals) < (reps+1)/2 {
		return AUCInterval{}, errors.New("metrics: bootstrap: too few rows of a class for the replicates to hold both")
	}
	slices.Sort(vals)
	lo := vals[NearestRank(len(vals), (1-level)/2)]
	hi := vals[NearestRank(len(vals), (1+level)/2)]
	return AUCInterval{Lo: lo, Hi: hi, Level: level, Replicates: len(vals)}, nil
}

// AUCAndDiffBootstrap returns [AUCBootstrap] of a and [AUCDiffBootstrap]
// of a and b, the same intervals to the bit, from one set of replicates:
// replicate r of both draws the same Poisson weights from the same
// source, AUCBootstrap giving the k-th of them to the k-th smallest
// score of a and AUCDiffBootstrap to row k, so they are drawn once for
// the two. It fails when either would.
func AUCAndDiffBootstrap(a, b []float64, labels []uint8, reps int, level float64, seed uint64) (auc, diff AUCInterval, err error) {
	if len(a) != len(b) {
		return AUCInterval{}, AUCInterval{}, errors.New("metrics: bootstrap: the two models scored different numbers of rows")
	}
	sa, err := newPairedSample(a, labels)
	if err != nil {
		return AUCInterval{}, AUCInterval{}, err
	}
	sb, err := newPairedSample(b, labels)
	if err != nil {
		return AUCInterval{}, AUCInterval{}, err
	}
	ivs, err := bootstrapIntervals(reps, level, 2, func() func(r int, out []float64) {
		weight := make([]uint32, len(a))
		return func(r int, out []float64) {
			weights(replicateRNG(seed, uint64(r)), len(weight), func(k int, v uint32) { weight[k] = v })
			out[0] = sa.sortedAUC(weight)
			out[1] = sa.weightedAUC(weight) - sb.weightedAUC(weight)
		}
	})
	if err != nil {
		return AUCInterval{}, AUCInterval{}, err
	}
	return ivs[0], ivs[1], nil
}

// bootSample is a scored sample sorted by score: pos[k] is 1 when the
// k-th smallest score is a positive, else 0, and last[k] says whether it
// ends its tie group.
type bootSample struct {
	pos  []uint64
	last []bool
}

func newBootSample(scores []float64, labels []uint8) (*bootSample, error) {
	p, err := newPairedSample(scores, labels)
	if err != nil {
		return nil, err
	}
	return &p.bootSample, nil
}

// poissonThresholds holds ⌊2³²·P(X ≤ k)⌋ for a Poisson(1) variable X,
// k = 0, 1, …: a uniform 32-bit u draws the first k with u <
// poissonThresholds[k] (the last entry is 2³², so every u draws).
var poissonThresholds = func() []uint64 {
	var c []uint64
	p, sum := math.Exp(-1), 0.0
	for k := 0; ; k++ {
		sum += p
		t := uint64(math.Floor(sum * (1 << 32)))
		if t >= 1<<32 || k == 20 {
			return append(c, 1<<32)
		}
		c = append(c, t)
		p /= float64(k + 1)
	}
}()

// poisson draws a Poisson(1) value from the 32-bit uniform u: the count
// of thresholds u reaches, without a branch up to k = 8 (1 − P(X ≤ 8) ≈
// 1e-6: the loop beyond is almost never entered).
func poisson(u uint64) uint32 {
	t := &poissonThresholds
	// (t−1−u)>>63 is 1 when u ≥ t, else 0 (u, t ≤ 2³²).
	k := ((*t)[0]-1-u)>>63 + ((*t)[1]-1-u)>>63 + ((*t)[2]-1-u)>>63 + ((*t)[3]-1-u)>>63 +
		((*t)[4]-1-u)>>63 + ((*t)[5]-1-u)>>63 + ((*t)[6]-1-u)>>63 + ((*t)[7]-1-u)>>63
	if k == 8 {
		for u >= (*t)[k] {
			k++
		}
	}
	return uint32(k)
}

// weights draws the n rows' Poisson(1) weights of one replicate from rng
// (two per 64-bit draw) and hands each to f in row order.
func weights(rng *rand.Rand, n int, f func(k int, w uint32)) {
	for k := 0; k < n; k += 2 {
		u := rng.Uint64()
		f(k, poisson(u&(1<<32-1)))
		if k+1 < n {
			f(k+1, poisson(u>>32))
		}
	}
}

// replicateRNG is replicate r's random source.
func replicateRNG(seed, r uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, r^0x626f6f7473747261)) // "bootstra"
}

// replicate returns the AUC of replicate r: the sample in which the k-th
// row appears w_k times, the w_k drawn as weights draws them (inlined
// here: this loop is the bootstrap's cost); NaN when the weights leave a
// class empty.
func (s *bootSample) replicate(seed, r uint64) float64 {
	rng := replicateRNG(seed, r)
	if !exactCounts(len(s.pos)) {
		var acc floatAUC
		var u uint64
		for k := range s.pos {
			if k%2 == 0 {
				u = rng.Uint64()
			} else {
				u >>= 32
			}
			acc.add(uint64(poisson(u&(1<<32-1))), s.pos[k], s.last[k])
		}
		return acc.auc()
	}
	var acc weightedAUC
	var u uint64
	for k := range s.pos {
		if k%2 == 0 {
			u = rng.Uint64()
		} else {
			u >>= 32
		}
		acc.add(uint64(poisson(u&(1<<32-1))), s.pos[k], s.last[k])
	}
	return acc.auc()
}

// maxExactRows is the most rows whose weighted AUC weightedAUC counts in
// integers. Its sums are exact in float64 too as long as twice the
// numerator stays below 2⁵³: a row's weight is at most 20 (the last
// Poisson threshold), so with n rows the numerator is at most
// (20n)²/4 = 100n², and 200n² < 2⁵³ for n ≤ 2²² (4,194,304). Up to
// there the integer sums give the same bits as float64 sums would; above
// it floatAUC sums in float64, rounding as it always has.
const maxExactRows = 1 << 22

// exactCounts says whether a sample of n rows is counted in integers.
func exactCounts(n int) bool { return n <= maxExactRows }

// weightedAUC accumulates the AUC of weighted rows handed over in score
// order: each row's weight (its copies), whether it is a positive (1) or
// not (0), and whether it ends its tie group (ties count ½). It counts in
// integers (twice the numerator, so that a tie's ½ stays whole), whose
// additions do not wait on each other's rounding as float64 ones do; for
// samples of at most maxExactRows rows, where every float64 sum of
// floatAUC is exact, its AUC is floatAUC's to the bit.
type weightedAUC struct {
	num2, negBelow, wp uint64
	pw, nw             uint64 // the open tie group's positive and negative weight
}

func (a *weightedAUC) add(w, pos uint64, last bool) {
	a.pw += w * pos
	a.nw += w * (1 - pos)
	if last {
		a.num2 += a.pw * (2*a.negBelow + a.nw)
		a.negBelow += a.nw
		a.wp += a.pw
		a.pw, a.nw = 0, 0
	}
}

// auc is the accumulated AUC, NaN when a class has no weight.
func (a *weightedAUC) auc() float64 {
	if a.wp == 0 || a.negBelow == 0 {
		return math.NaN()
	}
	return float64(a.num2) / 2 / (float64(a.wp) * float64(a.negBelow))
}

// floatAUC is weightedAUC summed in float64, for samples above
// maxExactRows rows.
type floatAUC struct {
	num, negBelow, wp float64
	pw, nw            uint64 // the open tie group's positive and negative weight
}

func (a *floatAUC) add(w, pos uint64, last bool) {
	a.pw += w * pos
	a.nw += w * (1 - pos)
	if last {
		a.num += float64(a.pw) * (a.negBelow + float64(a.nw)/2)
		a.negBelow += float64(a.nw)
		a.wp += float64(a.pw)
		a.pw, a.nw = 0, 0
	}
}

// auc is the accumulated AUC, NaN when a class has no weight.
func (a *floatAUC) auc() float64 {
	if a.wp == 0 || a.negBelow == 0 {
		return math.NaN()
	}
	return a.num / (a.wp * a.negBelow)
}

// AUCDiffBootstrap returns the percentile interval of AUC(a) − AUC(b),
// two models' scores of the same rows against the same labels, from b
// paired Poisson bootstrap replicates: each replicate weighs every row
// once (Poisson(1), as AUCBootstrap) and computes both weighted AUCs with
// those weights, so the interval reflects how the two models' errors move
// together on the rows (narrower than the two intervals apart when they
// do). Seeds, ties, NaN and dropped replicates are as in AUCBootstrap.
func AUCDiffBootstrap(a, b []float64, labels []uint8, reps int, level float64, seed uint64) (AUCInterval, error) {
	if len(a) != len(b) {
		return AUCInterval{}, errors.New("metrics: bootstrap: the two models scored different numbers of rows")
	}
	sa, err := newPairedSample(a, labels)
	if err != nil {
		return AUCInterval{}, err
	}
	sb, err := newPairedSample(b, labels)
	if err != nil {
		return AUCInterval{}, err
	}
	return bootstrapInterval(reps, level, func() func(r int) float64 {
		weight := make([]uint32, len(a))
		return func(r int) float64 {
			weights(replicateRNG(seed, uint64(r)), len(weight), func(k int, v uint32) { weight[k] = v })
			return sa.weightedAUC(weight) - sb.weightedAUC(weight)
		}
	})
}

// pairedSample is a bootSample that also keeps, for each sorted position,
// the row it came from, so that weights drawn per row apply to it.
type pairedSample struct {
	bootSample
	row []int
}

func newPairedSample(scores []float64, labels []uint8) (*pairedSample, error) {
	if len(scores) != len(labels) {
		return nil, errors.New("metrics: bootstrap: scores and labels differ in length")
	}
	order := make([]int, len(scores))
	var np int
	for i := range order {
		if math.IsNaN(scores[i]) {
			return nil, errors.New("metrics: bootstrap: a NaN score")
		}
		order[i] = i
		np += int(labels[i] & 1)
	}
	if np == 0 || np == len(scores) {
		return nil, errors.New("metrics: bootstrap: a single class")
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(scores[i], scores[j]) })
	s := &pairedSample{bootSample: bootSample{pos: make([]uint64, len(order)), last: make([]bool, len(order))}, row: order}
	for k, i := range order {
		if labels[i] == 1 {
			s.pos[k] = 1
		}
		s.last[k] = k == len(order)-1 || scores[order[k+1]] != scores[i]
	}
	return s, nil
}

// sortedAUC is the AUC of the sample in which the k-th smallest score
// appears w[k] times (the weights by sorted position, as replicate gives
// them); NaN when the weights leave a class empty.
func (s *bootSample) sortedAUC(w []uint32) float64 {
	if !exactCounts(len(s.pos)) {
		var acc floatAUC
		for k, v := range w {
			acc.add(uint64(v), s.pos[k], s.last[k])
		}
		return acc.auc()
	}
	var acc weightedAUC
	for k, v := range w {
		acc.add(uint64(v), s.pos[k], s.last[k])
	}
	return acc.auc()
}

// weightedAUC is the AUC of the sample in which row i appears w[i] times;
// NaN when the weights leave a class empty.
func (s *pairedSample) weightedAUC(w []uint32) float64 {
	if !exactCounts(len(s.row)) {
		var acc floatAUC
		for k, i := range s.row {
			acc.add(uint64(w[i]), s.pos[k], s.last[k])
		}
		return acc.auc()
	}
	var acc weightedAUC
	for k, i := range s.row {
		acc.add(uint64(w[i]), s.pos[k], s.last[k])
	}
	return acc.auc()
}
