package integrity

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// HijackWindow is how many training batches' [GradientSplit] a
// [HijackWatch] averages.
const HijackWindow = 20

// HijackWatch is the passive party's watch for training hijacking during
// a run: the mean [GradientSplit] of the gradients of the last
// HijackWindow training batches (batches without a figure left out)
// against a threshold. It needs no label: it reads only what the passive
// party receives.
type HijackWatch struct {
	threshold float64
	last      []float64
	next      int
}

// NewHijackWatch returns a watch that alarms when the mean split falls
// below threshold, in (0, 0.5).
func NewHijackWatch(threshold float64) (*HijackWatch, error) {
	if !(threshold > 0 && threshold < 0.5) {
		return nil, fmt.Errorf("integrity: hijacking threshold %g, want one in (0, 0.5)", threshold)
	}
	return &HijackWatch{threshold: threshold}, nil
}

// Batch takes the gradient g received for the training batch of step:
// an *Alarm once HijackWindow batches have a figure and their mean split
// is below the threshold (before g is applied: the caller refuses it).
func (w *HijackWatch) Batch(step int64, g *tensor.Matrix) error {
	s := GradientSplit(g)
	if math.IsNaN(s) {
		return nil
	}
	if len(w.last) < HijackWindow {
		w.last = append(w.last, s)
	} else {
		w.last[w.next] = s
		w.next = (w.next + 1) % HijackWindow
	}
	if len(w.last) < HijackWindow {
		return nil
	}
	var mean float64
	for _, v := range w.last {
		mean += v / HijackWindow
	}
	if mean < w.threshold {
		return &Alarm{Detector: "gradient_split", Step: step, Score: mean, Threshold: w.threshold, Below: true,
			Verdict: "the active party is suspected of hijacking the passive party's training (its gradients carry no label's sign); the passive party refuses them"}
	}
	return nil
}

// GradientSplit is the passive party's label-free look at the gradient
// g (B×d) it received for one training batch: the share of the rows on
// the minority side of the batch's principal direction. The gradient of a
// binary cross-entropy is, row by row, (p_i − y_i) times the top model's
// derivative at e_i; while those derivatives point roughly one way, the
// rows split by their label's sign of p_i − y_i into two opposite groups
// along the principal direction, the smaller holding about min(π, 1 − π)
// of the rows (π the positive rate). A malicious active party that trains
// the bottom towards a target of its own (feature-space hijacking, FSHA)
// answers with the gradient of a loss with no label in it, whose rows lie
// on one side. Rows of zero projection count for neither side. It returns
// NaN for a batch of fewer than two non-zero rows, and for one whose rows
// are all equal (gradient averaging over the whole batch): such a
// gradient tells nothing row by row, and the watch is blind to it.
//
// The principal direction is the top right singular vector of g, found by
// 30 power iterations on gᵀg from the batch's largest row.
func GradientSplit(g *tensor.Matrix) float64 {
	if g.Rows < 2 || g.Cols == 0 || sameRows(g) {
		return math.NaN()
	}
	d := g.Cols
	v, w := make([]float64, d), make([]float64, d)
	var best float64
	for i := range g.Rows {
		var n float64
		for _, x := range g.Row(i) {
			n += float64(x) * float64(x)
		}
		if n > best {
			best = n
			for j, x := range g.Row(i) {
				v[j] = float64(x)
			}
		}
	}
	if best == 0 {
		return math.NaN()
	}
	normalise(v)
	for range 30 {
		clear(w)
		for i := range g.Rows {
			row := g.Row(i)
			var p float64
			for j, x := range row {
				p += float64(x) * v[j]
			}
			for j, x := range row {
				w[j] += p * float64(x)
			}
		}
		if normalise(w) == 0 {
			return math.NaN()
		}
		v, w = w, v
	}
	pos, neg := 0, 0
	for i := range g.Rows {
		var p float64
		for j, x := range g.Row(i) {
			p += float64(x) * v[j]
		}
		switch {
		case p > 0:
			pos++
		case p < 0:
			neg++
		}
	}
	if pos+neg < 2 {
		return math.NaN()
	}
	return float64(min(pos, neg)) / float64(pos+neg)
}

// sameRows reports whether every row of g equals the first.
func sameRows(g *tensor.Matrix) bool {
	first := g.Row(0)
	for i := 1; i < g.Rows; i++ {
		for j, x := range g.Row(i) {
			if x != first[j] {
				return false
			}
		}
	}
	return true
}

// normalise scales v to unit length and returns its former length.
func normalise(v []float64) float64 {
	var n float64
	for _, x := range v {
		n += x * x
	}
	n = math.Sqrt(n)
	if n > 0 {
		for j := range v {
			v[j] /= n
		}
	}
	return n
}
