package report

import (
	"math"
	"sort"
)

// binned returns the mean of ys in up to n equal-width bins of xs (x at
// the mean x of each bin); with at most n points it returns them as they
// are.
func binned(xs, ys []float64, n int) (bx, by []float64) {
	if len(xs) <= n {
		return append([]float64(nil), xs...), append([]float64(nil), ys...)
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if hi == lo {
		hi = lo + 1
	}
	sx, sy := make([]float64, n), make([]float64, n)
	cnt := make([]int, n)
	for i, x := range xs {
		b := int(float64(n) * (x - lo) / (hi - lo))
		if b >= n {
			b = n - 1
		}
		sx[b] += x
		sy[b] += ys[i]
		cnt[b]++
	}
	for b := range n {
		if cnt[b] > 0 {
			bx = append(bx, sx[b]/float64(cnt[b]))
			by = append(by, sy[b]/float64(cnt[b]))
		}
	}
	return bx, by
}

// averageCurves averages curves of several seeds on a common grid of n
// bins over their joint x range; each curve is binned first.
func averageCurves(curves [][2][]float64, n int) (bx, by []float64) {
	if len(curves) == 1 {
		return binned(curves[0][0], curves[0][1], n)
	}
	var xs, ys []float64
	for _, c := range curves {
		xs = append(xs, c[0]...)
		ys = append(ys, c[1]...)
	}
	return binned(xs, ys, n)
}

func binWidth(xs []float64) int {
	if len(xs) <= maxBins {
		return 1
	}
	span := xs[len(xs)-1] - xs[0]
	w := int(math.Round(span / maxBins))
	return max(w, 1)
}

// meanAtSteps averages several seeds' evaluation curves step by step.
func meanAtSteps(curves [][2][]float64) (xs, ys []float64) {
	sum := map[float64]float64{}
	cnt := map[float64]int{}
	for _, c := range curves {
		for i, x := range c[0] {
			sum[x] += c[1][i]
			cnt[x]++
		}
	}
	for x := range sum {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	for _, x := range xs {
		ys = append(ys, sum[x]/float64(cnt[x]))
	}
	return xs, ys
}

// leakSeries returns the steps and defined leak AUCs of key in r.
func leakSeries(r *Run, key string) (xs, ys []float64) {
	for _, b := range r.Batches {
		if v := b.Leak[key]; v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			xs = append(xs, float64(b.Step))
			ys = append(ys, *v)
		}
	}
	return xs, ys
}

// protSeries returns the steps and values of a protection field.
func protSeries(r *Run, field string) (xs, ys []float64) {
	for _, b := range r.Batches {
		if v := b.Protection[field]; v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			xs = append(xs, float64(b.Step))
			ys = append(ys, *v)
		}
	}
	return xs, ys
}

// stat averages a summary figure over runs, skipping missing values.
func stat(runs []*Run, f func(*Summary) *float64) (float64, bool) {
	var s float64
	var n int
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		if v := f(r.Summary); v != nil && !math.IsNaN(*v) {
			s += *v
			n++
		}
	}
	if n == 0 {
		return math.NaN(), false
	}
	return s / float64(n), true
}

func leakStat(key string, abs bool) func(*Summary) *float64 {
	return func(s *Summary) *float64 {
		st, ok := s.Leak[key]
		if !ok {
			return nil
		}
		if abs {
			return st.Q95Abs
		}
		return st.Q95
	}
}
