package integrity

import (
	"math"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "norm_shift",
		Help: "the batch's mean embedding row norm as a z-score against the party's own earlier batches (running mean and deviation, forgetting 0.1 per batch)",
		New:  func() Detector { return &normShift{} }})
}

// normShift scores |n_t − μ|/σ, n_t the batch's mean row norm, μ and σ²
// the running mean and variance of earlier batches' n (runningStat; σ at
// least 1% of μ, so that a bottom whose norm barely moves does not make
// every change an alarm); 0 during the warm-up.
type normShift struct{ s runningStat }

func (o *normShift) Name() string { return "norm_shift" }

// Observe implements Detector.
func (o *normShift) Observe(_ int64, e *tensor.Matrix) float64 {
	if e.Rows == 0 || e.Cols == 0 {
		return 0
	}
	n := 0.0
	for r := range e.Rows {
		n += rowNorm(e, r)
	}
	n /= float64(e.Rows)
	score := 0.0
	if o.s.warm() {
		sd := max(math.Sqrt(o.s.vr), 0.01*math.Abs(o.s.mean), 1e-12)
		score = math.Abs(n-o.s.mean) / sd
	}
	o.s.add(n)
	return score
}
