package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Key returns the name of a leak series, "ATTACK/LAYER" (e.g. "norm/cut",
// "hint5_inner/2"), as used in batches.jsonl and summary.json.
func Key(attack, layer string) string { return attack + "/" + layer }

type leakKey struct{ attack, layer string }

type leakSeries struct {
	aucs    []float64
	comps   []Composition // comps[i]: the scored positives and negatives of aucs[i]
	skipped int
}

// Leak collects the per-batch leak AUCs of every (attack, layer) pair of a
// run, in the order they arrive, and summarises each series (METHODS §2). The
// zero value is not usable; call [NewLeak]. A Leak must not be used from
// two goroutines at once.
type Leak struct {
	series map[leakKey]*leakSeries
	sc     Scratch
	// null caches the exact null distributions behind ChanceQ95Abs (the
	// lower-half CDF of U per (min, max) composition), so that a run whose
	// batches repeat a composition computes it once.
	null map[[2]int][]float64
}

// NewLeak returns an empty accumulator.
func NewLeak() *Leak {
	return &Leak{series: make(map[leakKey]*leakSeries), null: make(map[[2]int][]float64)}
}

func (l *Leak) get(attack, layer string) *leakSeries {
	k := leakKey{attack, layer}
	s := l.series[k]
	if s == nil {
		s = &leakSeries{}
		l.series[k] = s
	}
	return s
}

// Add records one batch's AUC for the series attack/layer, computed over
// pos scored positives and neg scored negatives (the composition that
// [LeakSummary.ChanceQ95Abs] needs). A batch with ok false (AUC undefined:
// one class only) or a NaN auc is counted as skipped and adds nothing to
// the series; its counts are ignored. It panics when a defined AUC comes
// with pos < 1 or neg < 1, which is a programming error.
func (l *Leak) Add(attack, layer string, auc float64, pos, neg int, ok bool) {
	s := l.get(attack, layer)
	if !ok || math.IsNaN(auc) {
		s.skipped++
		return
	}
	if pos < 1 || neg < 1 {
		panic(fmt.Sprintf("metrics: leak AUC of %s with %d positives and %d negatives", Key(attack, layer), pos, neg))
	}
	s.aucs = append(s.aucs, auc)
	s.comps = append(s.comps, Composition{Pos: pos, Neg: neg})
}

// Observe computes the batch's AUC of scores against labels over the rows
// that mask selects (see [Scratch.AUC]) with the accumulator's own
// scratch, records it with [Leak.Add] together with the numbers of
// scored positives and negatives (counted in the same pass), and returns
// it.
func (l *Leak) Observe(attack, layer string, scores []float64, labels []uint8, mask []bool) (auc float64, ok bool) {
	auc, pos, neg, ok := l.sc.aucCounts(scores, labels, mask)
	l.Add(attack, layer, auc, pos, neg, ok)
	return auc, ok
}

// Series returns the recorded AUCs of attack/layer in arrival order
// (skipped batches left out), or nil when there are none. The slice is
// the accumulator's own: read it, do not modify it; it is valid until the
// next Add to that series.
func (l *Leak) Series(attack, layer string) []float64 {
	if s := l.series[leakKey{attack, layer}]; s != nil {
		return s.aucs
	}
	return nil
}

// Compositions returns the scored positives and negatives of every
// recorded AUC of attack/layer, parallel to [Leak.Series], or nil when
// there are none. The slice is the accumulator's own: read it, do not
// modify it; it is valid until the next Add to that series.
func (l *Leak) Compositions(attack, layer string) []Composition {
	if s := l.series[leakKey{attack, layer}]; s != nil {
		return s.comps
	}
	return nil
}

// Keys returns the names ([Key]) of every series seen so far, sorted.
func (l *Leak) Keys() []string {
	keys := make([]string, 0, len(l.series))
	for k := range l.series {
		keys = append(keys, Key(k.attack, k.layer))
	}
	slices.Sort(keys)
	return keys
}

// LeakSummary summarises one leak series over a run.
type LeakSummary struct {
	// Q95 is the nearest-rank 95% quantile ([Quantile]) of the raw AUCs.
	Q95 float64 `json:"q95"`
	// Q95Abs is the nearest-rank 95% quantile of |AUC − 0.5|.
	Q95Abs float64 `json:"q95_abs"`
	// ChanceQ95Abs is the chance floor of Q95Abs: the 95% quantile of
	// |AUC − ½| that a scoring function independent of the labels
	// (continuous scores, no ties) would give over the same batches. With
	// N the number of batches with a defined AUC (an epoch-memory attack's
	// epochs count as batches of every example) and A_b the Mann–Whitney
	// AUC of batch b under that null hypothesis, given the batch's numbers
	// n1 of scored positives and n0 of scored negatives (the hint attacks
	// do not score their hints, so the counts are per series), it is the
	// smallest x ≥ 0 with
	//
	//	(1/N) Σ_b P(|A_b − ½| > x) ≤ 0.05,
	//
	// i.e. the 95% quantile of the mixture of the batches' null
	// distributions, found by bisection on x to within 1e-10 (a tail
	// within 1e-12 of 0.05 counts as ≤ 0.05, so that exact ties are not
	// decided by rounding). A_b = U/(n1·n0), with U the number of
	// (positive, negative) pairs in which the positive ranks higher:
	//   - exact when min(n1, n0) ≤ 10, from the recurrence on the
	//     top-ranked element P_{m,n}(u) = m/(m+n)·P_{m−1,n}(u−n) +
	//     n/(m+n)·P_{m,n−1}(u), P_{0,n} and P_{m,0} all mass at U = 0
	//     (when m(m+1)/2 · n(n+1)/2 > 5·10⁷, m and n the smaller and the
	//     larger count, the same distribution from the Gaussian-binomial
	//     product, O(m²n)); the inequality is strict on that discrete
	//     distribution;
	//   - otherwise normal with mean ½ and the exact null variance
	//     (n1+n0+1)/(12·n1·n0), without continuity correction.
	//
	// A series whose Q95Abs is near this value shows no more leakage than
	// sampling noise at its batch size: with 128 rows at 10% positives a
	// useless score still gives about 0.17.
	ChanceQ95Abs float64 `json:"chance_q95_abs"`
	// Mean is the mean of the raw AUCs.
	Mean float64 `json:"mean"`
	// Batches is the number of batches with a defined AUC.
	Batches int `json:"batches"`
	// Skipped is the number of batches whose AUC was undefined.
	Skipped int `json:"skipped"`
	// Q95AbsUpper is a distribution-free upper confidence bound, at level
	// LeakBoundLevel, on the 95% quantile of |AUC − ½| that the series'
	// batches are drawn from: the order statistic of rank
	// QuantileUpperRank(Batches, 0.95, LeakBoundLevel) (215 of 220
	// batches, 388 of 400), taking the batches as independent draws. With
	// fewer than MinQuantileBoundCount(0.95, LeakBoundLevel) = 59 batches,
	// from which no order statistic is such a bound, it is ½, the bound
	// that always holds (|AUC − ½| never exceeds ½); NaN only with no
	// defined AUC at all.
	Q95AbsUpper float64 `json:"q95_abs_upper"`
}

// Summary summarises the series attack/layer. With no defined AUC (no
// batch, or every batch skipped) Q95, Q95Abs, ChanceQ95Abs and Mean are
// NaN, which JSON encodes as null.
func (l *Leak) Summary(attack, layer string) LeakSummary {
	s := l.series[leakKey{attack, layer}]
	if s == nil {
		return LeakSummary{Q95: math.NaN(), Q95Abs: math.NaN(), ChanceQ95Abs: math.NaN(), Mean: math.NaN(), Q95AbsUpper: math.NaN()}
	}
	return l.summarise(s)
}

// Summaries returns the summary of every series, keyed by [Key].
func (l *Leak) Summaries() map[string]LeakSummary {
	out := make(map[string]LeakSummary, len(l.series))
	for k, s := range l.series {
		out[Key(k.attack, k.layer)] = l.summarise(s)
	}
	return out
}

func (l *Leak) summarise(s *leakSeries) LeakSummary {
	sum := LeakSummary{Batches: len(s.aucs), Skipped: s.skipped,
		Q95: math.NaN(), Q95Abs: math.NaN(), ChanceQ95Abs: math.NaN(), Mean: math.NaN(), Q95AbsUpper: math.NaN()}
	if len(s.aucs) == 0 {
		return sum
	}
	buf := slices.Clone(s.aucs)
	slices.Sort(buf)
	// Add rejects NaN, so these cannot fail.
	sum.Q95, _ = QuantileSorted(buf, 0.95)
	var total float64
	for i, v := range s.aucs {
		total += v
		buf[i] = math.Abs(v - 0.5)
	}
	sum.Mean = total / float64(len(s.aucs))
	slices.Sort(buf)
	sum.Q95Abs, _ = QuantileSorted(buf, 0.95)
	sum.Q95AbsUpper = 0.5
	if k, ok := QuantileUpperRank(len(buf), 0.95, LeakBoundLevel); ok {
		sum.Q95AbsUpper = buf[k-1]
	}
	sum.ChanceQ95Abs = chanceQ95Abs(s.comps, nil, l.null)
	return sum
}

// leakSummaryJSON is LeakSummary with nullable numbers.
type leakSummaryJSON struct {
	Q95          *float64 `json:"q95"`
	Q95Abs       *float64 `json:"q95_abs"`
	ChanceQ95Abs *float64 `json:"chance_q95_abs"`
	Mean         *float64 `json:"mean"`
	Batches      int      `json:"batches"`
	Skipped      int      `json:"skipped"`
	Q95AbsUpper  *float64 `json:"q95_abs_upper"`
}

func nullable(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func fromNullable(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// MarshalJSON encodes s with the tags q95, q95_abs, chance_q95_abs, mean,
// batches and skipped; an undefined (NaN) number becomes null.
func (s LeakSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(leakSummaryJSON{
		Q95: nullable(s.Q95), Q95Abs: nullable(s.Q95Abs), ChanceQ95Abs: nullable(s.ChanceQ95Abs), Mean: nullable(s.Mean),
		Batches: s.Batches, Skipped: s.Skipped, Q95AbsUpper: nullable(s.Q95AbsUpper),
	})
}

// UnmarshalJSON decodes what MarshalJSON writes; null becomes NaN.
func (s *LeakSummary) UnmarshalJSON(b []byte) error {
	var j leakSummaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = LeakSummary{Q95: fromNullable(j.Q95), Q95Abs: fromNullable(j.Q95Abs),
		ChanceQ95Abs: fromNullable(j.ChanceQ95Abs), Mean: fromNullable(j.Mean),
		Batches: j.Batches, Skipped: j.Skipped, Q95AbsUpper: fromNullable(j.Q95AbsUpper)}
	return nil
}

// SplitKey splits a series name "ATTACK/LAYER" at its first slash; ok is
// false when there is none.
func SplitKey(key string) (attack, layer string, ok bool) {
	return strings.Cut(key, "/")
}
