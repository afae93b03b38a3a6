package integrity

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestRunningStatWarmup: over the warm-up the running statistic is the
// plain mean and population variance (two-pass here); the next value
// moves the mean by a tenth of its distance.
func TestRunningStatWarmup(t *testing.T) {
	xs := []float64{3, -1, 4, 1, -5, 9, 2, 6, 5, 3}
	var s runningStat
	for _, x := range xs {
		s.add(x)
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	v /= float64(len(xs))
	if !s.warm() || math.Abs(s.mean-m) > 1e-12 || math.Abs(s.vr-v) > 1e-12 {
		t.Fatalf("mean %g var %g warm %t, want %g %g true", s.mean, s.vr, s.warm(), m, v)
	}
	s.add(m + 10)
	if math.Abs(s.mean-(m+1)) > 1e-12 {
		t.Errorf("after a value 10 above the mean: %g, want %g", s.mean, m+1)
	}
}

// oneColumnBatch is a batch of two rows whose first column is x (the
// other column 0): mean row norm |x|.
func oneColumnBatch(x float32) *tensor.Matrix {
	e := tensor.New(2, 2)
	e.Data[0], e.Data[2] = x, x
	return e
}

// TestNormShiftByHand: ten batches of mean row norm 1 … 10 (mean 5.5,
// population variance 8.25) score 0; a batch of norm 20 scores
// (20 − 5.5)/√8.25.
func TestNormShiftByHand(t *testing.T) {
	d := &normShift{}
	for i := range 10 {
		if s := d.Observe(int64(i), oneColumnBatch(float32(i+1))); s != 0 {
			t.Fatalf("warm-up batch %d scored %g", i, s)
		}
	}
	want := (20 - 5.5) / math.Sqrt(8.25)
	if s := d.Observe(10, oneColumnBatch(-20)); math.Abs(s-want) > 1e-6 {
		t.Errorf("score %g, want %g", s, want)
	}
}

// TestDirectionShiftByHand: batch means alternating (1, 1), (1, −1), …
// for eleven batches, then (0, 1): the score is c₁₁ / mean(c₁ … c₁₀),
// each c_t = 1 − cos(m_t, μ_t) with μ_t the plain average of the earlier
// batch means over the warm-up, and μ₁₁ = μ₁₀ + 0.1·(m₁₀ − μ₁₀), all
// computed here from those definitions.
func TestDirectionShiftByHand(t *testing.T) {
	mean := func(t int) [2]float64 {
		if t == 11 {
			return [2]float64{0, 1}
		}
		return [2]float64{1, float64(1 - 2*(t%2))}
	}
	cosTerm := func(a, b [2]float64) float64 {
		return 1 - (a[0]*b[0]+a[1]*b[1])/math.Sqrt((a[0]*a[0]+a[1]*a[1])*(b[0]*b[0]+b[1]*b[1]))
	}
	var cs []float64
	var mu [2]float64
	for tt := 1; tt <= 11; tt++ {
		if tt <= 10 {
			mu = [2]float64{}
			for s := range tt {
				mu[0] += mean(s)[0] / float64(tt)
				mu[1] += mean(s)[1] / float64(tt)
			}
		} else {
			m10 := mean(10)
			mu[0] += 0.1 * (m10[0] - mu[0])
			mu[1] += 0.1 * (m10[1] - mu[1])
		}
		cs = append(cs, cosTerm(mean(tt), mu))
	}
	cbar := 0.0
	for _, c := range cs[:10] {
		cbar += c / 10
	}
	want := cs[10] / cbar

	d := &directionShift{}
	var got float64
	for tt := 0; tt <= 11; tt++ {
		m := mean(tt)
		e := tensor.New(2, 2) // two rows m ± (0.5, −0.5): column means m
		e.Data[0], e.Data[1] = float32(m[0]+0.5), float32(m[1]-0.5)
		e.Data[2], e.Data[3] = float32(m[0]-0.5), float32(m[1]+0.5)
		got = d.Observe(int64(tt), e)
		if tt < 11 && got != 0 {
			t.Fatalf("batch %d (warm-up) scored %g", tt, got)
		}
	}
	if math.Abs(got-want) > 1e-5*want {
		t.Errorf("score %g, want %g", got, want)
	}
}
