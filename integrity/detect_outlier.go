package integrity

import (
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

// The outlier detector's settings.
const (
	// outlierWarmup batches are learnt from before any is scored.
	outlierWarmup = 10
	// outlierDecay is the weight of a batch's inliers in the running
	// column moments after the warm-up.
	outlierDecay = 0.05
	// outlierTau is the mean squared z-score over the columns above which
	// a row is an outlier.
	outlierTau = 4
)

func init() {
	RegisterDetector(DetectorSpec{Name: "outlier",
		Help: "per-row embedding outliers against the party's own running column moments: the share of the batch's rows whose mean squared z-score over the columns exceeds 4 (a backdoor's triggered rows)",
		New:  func() Detector { return &outlier{} }})
}

// outlier scores the share of a batch's rows that lie far from the
// party's earlier embeddings: row i's d_i = mean over the columns j of
// ((e_ij − μ_j)/σ_j)², μ and σ² the running column mean and variance of
// the inlier rows (d_i ≤ 4) of earlier batches (an average over the first
// ten, which score 0; exponential forgetting with weight 0.05 per batch
// after). An honest embedding drifts slowly; a backdoor's triggered rows
// (VILLAIN's amplified stripe, gradient replacement's triggered rows at
// the target rows' places) stand out from it.
type outlier struct {
	batches  int
	mean, vr []float64
	d        []float64
}

func (o *outlier) Name() string { return "outlier" }

func (o *outlier) Observe(_ int64, e *tensor.Matrix) float64 {
	if e.Rows == 0 || e.Cols == 0 {
		return 0
	}
	if len(o.mean) != e.Cols {
		o.mean, o.vr, o.batches = make([]float64, e.Cols), make([]float64, e.Cols), 0
	}
	o.d = buf.Grow(o.d, e.Rows)
	warm := o.batches >= outlierWarmup
	out := 0
	for r := range e.Rows {
		o.d[r] = 0
		if !warm {
			continue
		}
		s := 0.0
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			if o.vr[c] > 0 {
				z := float64(v) - o.mean[c]
				s += z * z / o.vr[c]
			}
		}
		o.d[r] = s / float64(e.Cols)
		if o.d[r] > outlierTau {
			out++
		}
	}
	o.update(e, warm)
	return float64(out) / float64(e.Rows)
}

// update moves the running moments toward the batch's inlier rows.
func (o *outlier) update(e *tensor.Matrix, warm bool) {
	w := outlierDecay
	if !warm {
		w = 1 / float64(o.batches+1)
	}
	o.batches++
	for c := range e.Cols {
		var n, s, s2 float64
		for r := range e.Rows {
			if o.d[r] > outlierTau {
				continue
			}
			z := float64(e.Data[r*e.Cols+c]) - o.mean[c]
			n++
			s += z
			s2 += z * z
		}
		if n == 0 {
			continue
		}
		// The batch's mean and its mean square about the old mean: the
		// new variance about the new mean is their blend less the shift.
		m := s / n
		o.mean[c] += w * m
		o.vr[c] = (1-w)*o.vr[c] + w*(s2/n) - w*w*m*m
	}
}
