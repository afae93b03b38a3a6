package integrity

import (
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "collapse",
		Help: "per-column variance collapse: 1 − (the batch's mean column variance ÷ that of the party's earlier batches, the first ten left out); 0 at or above its history, 1 for a constant embedding",
		New:  func() Detector { return &collapse{} }})
}

// collapseWarmup is how many first batches of a run the collapse
// detector neither scores nor remembers: a freshly initialised bottom's
// output variance shrinks fast over its first batches (on Criteo-shaped
// data an honest run's 16th batch scored 0.91 against the first ones,
// integrity.md §11c), which says nothing about the party.
const collapseWarmup = 10

// collapse compares a batch's mean within-batch column variance with
// the average of that figure over the earlier batches of the run after
// the first collapseWarmup (which score 0, as does the first after them).
type collapse struct {
	seen int
	n    float64
	sum  float64
}

func (d *collapse) Name() string { return "collapse" }

func (d *collapse) Observe(_ int64, e *tensor.Matrix) float64 {
	if e.Rows < 2 { // one row has no variance to compare: a schedule's short last batch can be one row
		return 0
	}
	if d.seen < collapseWarmup {
		d.seen++
		return 0
	}
	v := MeanColumnVariance(e)
	score := 0.0
	if d.n > 0 {
		hist := d.sum / d.n
		if hist > 0 {
			score = max(0, 1-v/hist)
		}
	}
	d.n++
	d.sum += v
	return score
}

// MeanColumnVariance is the mean over e's columns of the population
// variance of the column's values in the batch.
func MeanColumnVariance(e *tensor.Matrix) float64 {
	return tensor.MeanColumnVariance(e)
}
