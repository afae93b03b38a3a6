package plan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPredictionUpperAgainstClosedForms checks the bound against t
// quantiles in closed form (ν = 1: tan(π(p − ½)); ν = 2:
// (2p − 1)/√(2p(1 − p))) and a printed table (ν = 4: 2.1318), with
// means and standard deviations worked out by hand.
func TestPredictionUpperAgainstClosedForms(t *testing.T) {
	t1 := math.Tan(math.Pi * 0.45)     // 6.3138
	t2 := 0.9 / math.Sqrt(2*0.95*0.05) // 2.9200
	for _, c := range []struct {
		name string
		x    []float64
		want float64
	}{
		// mean 0.3, s = √(0.02²·2/1) = 0.02√2, √(1 + ½)
		{"two seeds", []float64{0.28, 0.32}, 0.3 + t1*0.02*math.Sqrt2*math.Sqrt(1.5)},
		// pima's grad_avg k=5 bounds of the sixth rerun: mean 0.39,
		// deviations 0, 0.007, −0.007: s = 0.007, √(1 + ⅓)
		{"three seeds", []float64{0.390, 0.397, 0.383}, 0.39 + t2*0.007*math.Sqrt(4.0/3)},
		// mean 0.2, deviations ±0.01, ±0.02, 0: s = √(0.001/4) = 0.0158114
		{"five seeds", []float64{0.19, 0.21, 0.18, 0.22, 0.2}, 0.2 + 2.1318*math.Sqrt(0.001/4)*math.Sqrt(1.2)},
		{"equal values", []float64{0.3, 0.3, 0.3}, 0.3},
	} {
		got := predictionUpper(c.x, 0.95)
		if math.Abs(got-c.want) > 2e-5 {
			t.Errorf("%s: predictionUpper(%v) = %.6f, want %.6f", c.name, c.x, got, c.want)
		}
	}
	for _, x := range [][]float64{nil, {0.3}, {0.3, math.NaN(), 0.2}} {
		if got := predictionUpper(x, 0.95); !math.IsNaN(got) {
			t.Errorf("predictionUpper(%v) = %v, want NaN", x, got)
		}
	}
}

// TestPredictionUpperCoversAFreshDraw checks the bound's level by
// simulation: drawn from one normal, a fourth value exceeds the bound
// from three in about 5% of trials (a second implementation of the
// level, not of the formula).
func TestPredictionUpperCoversAFreshDraw(t *testing.T) {
	const trials = 20000
	r := rand.New(rand.NewPCG(7, 7))
	miss := 0
	x := make([]float64, 3)
	for range trials {
		for i := range x {
			x[i] = 0.35 + 0.02*r.NormFloat64()
		}
		if 0.35+0.02*r.NormFloat64() > predictionUpper(x, 0.95) {
			miss++
		}
	}
	// binomial(20000, 0.05): sd 0.0015; 4 sd either side
	if p := float64(miss) / trials; math.Abs(p-0.05) > 0.006 {
		t.Errorf("a fresh draw exceeded the bound in %.4f of %d trials, want 0.05", p, trials)
	}
}
