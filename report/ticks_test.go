package report

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// labelled returns the labelled ticks of [lo, hi] as values and labels.
func labelled(lo, hi float64) (vs []float64, ls []string) {
	for _, t := range (roundTicks{}).Ticks(lo, hi) {
		if t.Label != "" {
			vs, ls = append(vs, t.Value), append(ls, t.Label)
		}
	}
	return vs, ls
}

// isRound reports whether d is 1, 2, 2.5 or 5 times a power of ten.
func isRound(d float64) bool {
	m := d / math.Pow(10, math.Floor(math.Log10(d)+1e-12))
	for _, r := range []float64{1, 2, 2.5, 5} {
		if math.Abs(m-r) < 1e-6 {
			return true
		}
	}
	return false
}

func TestRoundTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string // the labels, hand-derived; "" to check the rules only
	}{
		{0, 1, "0.0 0.2 0.4 0.6 0.8 1.0"},
		{0.45, 0.55, "0.46 0.48 0.50 0.52 0.54"},
		{1, 300, "50 100 150 200 250 300"},
		{12, 290, "50 100 150 200 250"},
		{0.4, 1, "0.4 0.6 0.8 1.0"},
		{0.695, 0.78, "0.70 0.72 0.74 0.76 0.78"},
		{0.47, 0.51, "0.47 0.48 0.49 0.50 0.51"},
		{-3, 7, "-2 0 2 4 6"},
		{0, 123456, "0 25k 50k 75k 100k"},
		{0, 20, "0 5 10 15 20"},
		{0.0012, 0.0031, ""},
		{997, 1003, ""},
		{0.5, 0.5000001, ""},
		{3e5, 9e6, ""},
	} {
		vs, ls := labelled(tc.lo, tc.hi)
		got := strings.Join(ls, " ")
		if tc.want != "" && got != tc.want {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
		if len(vs) < 2 || len(vs) > 8 {
			t.Errorf("[%g, %g]: %d labelled ticks (%q), want 2…8", tc.lo, tc.hi, len(vs), got)
			continue
		}
		d := (vs[len(vs)-1] - vs[0]) / float64(len(vs)-1)
		if !isRound(d) {
			t.Errorf("[%g, %g]: step %g is not 1, 2, 2.5 or 5 × 10^k (%q)", tc.lo, tc.hi, d, got)
		}
		dec := -1
		for i, v := range vs {
			if v < tc.lo-1e-12 || v > tc.hi+1e-12 {
				t.Errorf("[%g, %g]: tick %g outside the axis", tc.lo, tc.hi, v)
			}
			if k := v / d; math.Abs(k-math.Round(k)) > 1e-4*math.Max(1, math.Abs(k)*1e-3) {
				t.Errorf("[%g, %g]: tick %g is not a multiple of the step %g", tc.lo, tc.hi, v, d)
			}
			if i > 0 && math.Abs(v-vs[i-1]-d) > 1e-6*d {
				t.Errorf("[%g, %g]: uneven steps in %v", tc.lo, tc.hi, vs)
			}
			if strings.HasSuffix(ls[i], "k") {
				continue
			}
			x, err := strconv.ParseFloat(ls[i], 64)
			if err != nil || math.Abs(x-v) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Errorf("[%g, %g]: label %q does not read back as %g", tc.lo, tc.hi, ls[i], v)
			}
			n := 0
			if _, frac, ok := strings.Cut(ls[i], "."); ok {
				n = len(frac)
			}
			if dec >= 0 && n != dec {
				t.Errorf("[%g, %g]: labels with different decimals: %q", tc.lo, tc.hi, got)
			}
			dec = n
		}
	}
}

func TestRoundTicksDegenerate(t *testing.T) {
	if ts := (roundTicks{}).Ticks(0.5, 0.5); len(ts) != 1 || ts[0].Label != "0.5" {
		t.Errorf("empty range: %+v, want one tick 0.5", ts)
	}
	if ts := (roundTicks{}).Ticks(math.NaN(), 1); ts != nil {
		t.Errorf("NaN range: %+v, want none", ts)
	}
}
