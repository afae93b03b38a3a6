package metrics

import (
	"math"
	"testing"
)

func TestDCSHandCases(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		ap, apI, mp, mpI, beta, want float64
	}{
		{0, 0, 0.8, 0.8, 0.5, 1},                          // the ideal point
		{0.8, 0, 0.8, 0.8, 0.5, 1 / (1 + 0.4*math.Sqrt2)}, // √(½·0.64) = 0.4√2
		{0.1, 0, 0.7, 0.8, 0.5, 1 / 1.1},                  // √(½·0.01 + ½·0.01) = 0.1
		{0.3, 0, 0.5, 0.9, 1, 1 / 1.4},                    // β = 1: utility only
		{0.3, 0, 0.5, 0.9, 0, 1 / 1.3},                    // β = 0: attack only
		{0.3, 0, 0.5, 0.9, 1.5, nan},
		{nan, 0, 0.5, 0.9, 0.5, nan},
	} {
		got := DCS(c.ap, c.apI, c.mp, c.mpI, c.beta)
		if !(math.Abs(got-c.want) < 1e-15 || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("DCS(%v, %v, %v, %v, β=%v) = %v, want %v", c.ap, c.apI, c.mp, c.mpI, c.beta, got, c.want)
		}
	}
	if got := MeanDCS([]float64{0.5, math.NaN(), 0.75}); got != 0.625 {
		t.Errorf("MeanDCS = %v, want 0.625", got)
	}
	if got := MeanDCS([]float64{math.NaN()}); !math.IsNaN(got) {
		t.Errorf("MeanDCS of nothing = %v, want NaN", got)
	}
}
