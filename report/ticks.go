package report

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// roundTicks marks an axis at round values: multiples of a step that is 1,
// 2, 2.5 or 5 times a power of ten, chosen so that the axis gets about
// five labelled ticks (2.5 only where it fits clearly better), with
// unlabelled minor ticks between them on round values too. Every label of
// an axis has the same number of decimals (as few as the step needs); from
// 10,000 up, a step of whole thousands is labelled in k (and zero as 0).
type roundTicks struct{}

var _ plot.Ticker = roundTicks{}

// roundMantissas are the step sizes per decade, with how many minor
// intervals each major interval is cut into.
var roundMantissas = []struct{ m, minor float64 }{{1, 5}, {2, 4}, {2.5, 5}, {5, 5}}

// labelledCount is the number of multiples of step in [lo, hi].
func labelledCount(lo, hi, step float64) int {
	return int(math.Floor(hi/step+1e-9) - math.Ceil(lo/step-1e-9) + 1)
}

// tickStep returns the round step whose number of labelled ticks in
// [lo, hi] is closest to five (a step of 2.5·10^k counts as 1.5 ticks
// further; ties go to the larger step), and its minor step.
func tickStep(lo, hi float64) (step, minor float64) {
	e0 := math.Floor(math.Log10(hi - lo))
	best := math.Inf(1)
	for e := e0 + 1; e >= e0-2; e-- {
		p := math.Pow(10, e)
		for k := len(roundMantissas) - 1; k >= 0; k-- {
			c := roundMantissas[k]
			s := c.m * p
			n := labelledCount(lo, hi, s)
			if n < 2 {
				continue
			}
			score := math.Abs(float64(n - 5))
			if c.m == 2.5 {
				score += 1.5
			}
			if score < best {
				best, step, minor = score, s, s/c.minor
			}
		}
	}
	return step, minor
}

// Ticks returns the ticks of [lo, hi].
func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step, minor := tickStep(lo, hi)
	label := tickLabeller(step, math.Max(math.Abs(lo), math.Abs(hi)))
	var ticks []plot.Tick
	first, last := math.Ceil(lo/minor-1e-9), math.Floor(hi/minor+1e-9)
	perMajor := math.Round(step / minor)
	for i := first; i <= last; i++ {
		t := plot.Tick{Value: i * minor}
		if math.Mod(i, perMajor) == 0 {
			t.Value = math.Round(i/perMajor) * step // the labelled value exactly k·step
			if t.Value == 0 {
				t.Value = 0 // no "-0"
			}
			t.Label = label(t.Value)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// tickLabeller formats the values of an axis whose labelled ticks are
// step apart and whose largest magnitude is big.
func tickLabeller(step, big float64) func(float64) string {
	if big >= 1e4 && step >= 1000 && math.Mod(step, 1000) == 0 {
		return func(v float64) string {
			if v == 0 {
				return "0"
			}
			return strconv.FormatFloat(v/1000, 'f', 0, 64) + "k"
		}
	}
	dec := 0
	for s := step; dec < 12 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, s); s *= 10 {
		dec++
	}
	return func(v float64) string { return strconv.FormatFloat(v, 'f', dec, 64) }
}
