package integrity

import (
	"math"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "direction_shift",
		Help: "how far the batch's mean embedding turns from the party's running mean (1 − cosine), relative to how far its earlier batches turned",
		New:  func() Detector { return &directionShift{} }})
}

// directionShift scores c_t / c̄, c_t = 1 − cos(m_t, μ) the angle term
// between the batch's column means m_t and the running column means μ of
// earlier batches (forgetting 0.1 per batch after an average over the
// first ten), c̄ the running mean of earlier batches' c (runningStat; at
// least 10⁻⁶); 0 during the warm-up.
type directionShift struct {
	mean []float64
	m    []float64
	n    int
	c    runningStat
}

func (o *directionShift) Name() string { return "direction_shift" }

// Observe implements Detector.
func (o *directionShift) Observe(_ int64, e *tensor.Matrix) float64 {
	if e.Rows == 0 || e.Cols == 0 {
		return 0
	}
	if len(o.mean) != e.Cols {
		o.mean, o.m, o.n, o.c = make([]float64, e.Cols), make([]float64, e.Cols), 0, runningStat{}
	}
	clear(o.m)
	for r := range e.Rows {
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			o.m[c] += float64(v)
		}
	}
	var dot, mm, uu float64
	for c := range o.m {
		o.m[c] /= float64(e.Rows)
		dot += o.m[c] * o.mean[c]
		mm += o.m[c] * o.m[c]
		uu += o.mean[c] * o.mean[c]
	}
	score := 0.0
	if o.n > 0 {
		ct := 1.0
		if mm > 0 && uu > 0 {
			ct = 1 - dot/math.Sqrt(mm*uu)
		}
		if o.c.warm() {
			score = ct / max(o.c.mean, 1e-6)
		}
		o.c.add(ct)
	}
	w := driftDecay
	if o.n < driftWarmup {
		w = 1 / float64(o.n+1)
	}
	o.n++
	for c := range o.m {
		o.mean[c] += w * (o.m[c] - o.mean[c])
	}
	return score
}
