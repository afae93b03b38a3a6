package report

import (
	"math"
	"slices"
	"sort"
)

// smoothFrac is the bandwidth (σ) of the Gaussian moving mean of a
// per-batch curve, as a fraction of the steps the curve spans.
const smoothFrac = 0.025

// smoothSigma returns the moving mean's σ, in steps, for a curve that
// spans span steps: smoothFrac of it, rounded, and at least one step.
func smoothSigma(span float64) float64 { return math.Max(1, math.Round(smoothFrac*span)) }

// smooth returns the Gaussian-weighted moving mean of the points (xs[i],
// ys[i]), in any order (several seeds' points may be mixed), with
// bandwidth sigma steps, at up to n evenly spread steps c of the x range.
// A point at step x weighs exp(−(x−c)²/2σ²) within 2σ of c and nothing
// beyond. Each output point is the weighted mean x and the weighted mean
// y, so a straight line stays exactly straight and a mean never reaches
// past the data; centres with no point within 2σ give no output.
func smooth(xs, ys []float64, sigma float64, n int) (sx, sy []float64) {
	if len(xs) == 0 {
		return nil, nil
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	x, y := make([]float64, len(xs)), make([]float64, len(xs))
	for k, i := range idx {
		x[k], y[k] = xs[i], ys[i]
	}
	lo, hi := x[0], x[len(x)-1]
	n = max(n, 1)
	for k := range n {
		c := lo
		if n > 1 {
			c = lo + (hi-lo)*float64(k)/float64(n-1)
		}
		a := sort.SearchFloat64s(x, c-2*sigma)
		var sw, swx, swy float64
		for i := a; i < len(x) && x[i] <= c+2*sigma; i++ {
			d := (x[i] - c) / sigma
			w := math.Exp(-d * d / 2)
			sw, swx, swy = sw+w, swx+w*x[i], swy+w*y[i]
		}
		if sw > 0 {
			sx, sy = append(sx, swx/sw), append(sy, swy/sw)
		}
	}
	return sx, sy
}

// smoothSeries smooths one curve (see smoothCurves).
func smoothSeries(xs, ys []float64) (sx, sy []float64) {
	sx, sy, _ = smoothCurves([][2][]float64{{xs, ys}})
	return sx, sy
}

// smoothCurves smooths several seeds' curves together with the bandwidth
// of their joint span; it returns the bandwidth too.
func smoothCurves(curves [][2][]float64) (sx, sy []float64, sigma float64) {
	var xs, ys []float64
	for _, c := range curves {
		xs = append(xs, c[0]...)
		ys = append(ys, c[1]...)
	}
	if len(xs) == 0 {
		return nil, nil, 1
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	sigma = smoothSigma(hi - lo)
	sx, sy = smooth(xs, ys, sigma, maxBins)
	return sx, sy, sigma
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
