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
	outlierDecay = 0.3
	// outlierTau is the mean squared z-score over the columns above which
	// a row is an outlier.
	outlierTau = 4
)

func init() {
	RegisterDetector(DetectorSpec{Name: "outlier",
		Help: "per-row embedding outliers against the party's own recent column moments: the share of the batch's rows whose mean squared z-score over the columns exceeds 4 (VILLAIN's triggered rows)",
		New:  func() Detector { return &outlier{} }})
}

// outlier scores the share of a batch's rows that are outliers of the
// party's recent embeddings (rowHistory: d_i > 4).
type outlier struct{ h rowHistory }

func (o *outlier) Name() string { return "outlier" }

func (o *outlier) Observe(_ int64, e *tensor.Matrix) float64 {
	d := o.h.scores(e)
	if d == nil {
		return 0
	}
	n := 0
	for _, v := range d {
		if v > outlierTau {
			n++
		}
	}
	return float64(n) / float64(len(d))
}

// rowHistory scores each row of a batch against the party's recent
// embeddings: d_i = mean over the columns j of ((e_ij − μ_j)/σ_j)², μ and
// σ² the running column mean and variance of the inlier rows (d_i ≤ 4) of
// earlier batches (an average over the first ten, which are not scored;
// exponential forgetting with weight 0.3 per batch after, which follows
// an honest bottom's drift during training), σ² at least a tenth of the
// columns' mean (a ReLU unit dead so far). A backdoor's triggered rows
// (VILLAIN's amplified stripe, gradient replacement's triggered rows at
// the target rows' places) stand out from the rows before them.
type rowHistory struct {
	batches  int
	mean, vr []float64
	d        []float64
}

// scores returns d_i of every row of e (valid until the next call; nil
// during the warm-up) and learns from e's inlier rows.
func (o *rowHistory) scores(e *tensor.Matrix) []float64 {
	if e.Rows == 0 || e.Cols == 0 {
		return nil
	}
	if len(o.mean) != e.Cols {
		o.mean, o.vr, o.batches = make([]float64, e.Cols), make([]float64, e.Cols), 0
	}
	o.d = buf.Grow(o.d, e.Rows)
	warm := o.batches >= outlierWarmup
	// A column whose history barely varies (a ReLU unit dead so far) is
	// measured against a tenth of the columns' mean variance instead.
	floor := 0.0
	for _, v := range o.vr {
		floor += v
	}
	floor = 0.1*floor/float64(len(o.vr)) + 1e-12
	for r := range e.Rows {
		o.d[r] = 0
		if !warm {
			continue
		}
		s := 0.0
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			z := float64(v) - o.mean[c]
			s += z * z / max(o.vr[c], floor)
		}
		o.d[r] = s / float64(e.Cols)
	}
	o.update(e, warm)
	if !warm {
		return nil
	}
	return o.d
}

// update moves the running moments toward the batch's inlier rows.
func (o *rowHistory) update(e *tensor.Matrix, warm bool) {
	w := outlierDecay
	if !warm {
		w = 1 / float64(o.batches+1)
	}
	o.batches++
	blendMoments(o.mean, o.vr, e, w, func(r int) bool { return o.d[r] <= outlierTau })
}

// blendMoments moves the column means and variances toward those of e's
// rows that inlier accepts, with weight w: the batch's mean and mean
// square about the old mean, blended, less the shift (a column with no
// inlier row keeps its moments).
func blendMoments(mean, vr []float64, e *tensor.Matrix, w float64, inlier func(r int) bool) {
	for c := range e.Cols {
		var n, s, s2 float64
		for r := range e.Rows {
			if !inlier(r) {
				continue
			}
			z := float64(e.Data[r*e.Cols+c]) - mean[c]
			n++
			s += z
			s2 += z * z
		}
		if n == 0 {
			continue
		}
		m := s / n
		mean[c] += w * m
		vr[c] = (1-w)*vr[c] + w*(s2/n) - w*w*m*m
	}
}
