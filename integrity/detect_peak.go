package integrity

import (
	"math"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterDetector(DetectorSpec{Name: "outlier_peak",
		Help: "the row of a batch farthest from the party's recent embeddings: log10(1 + its mean squared z-score over the columns) (gradient replacement's few triggered rows)",
		New:  func() Detector { return &outlierPeak{} }})
}

// outlierPeak scores a batch by its farthest row, log10(1 + max_i d_i)
// with d_i the row's mean squared z-score against the party's recent
// embeddings (rowHistory): gradient replacement's bottom learns, with an
// amplified gradient, to map its trigger where the target class lies,
// and the one or two triggered rows of a batch stand out where the
// share of outliers hardly moves.
type outlierPeak struct{ h rowHistory }

func (o *outlierPeak) Name() string { return "outlier_peak" }

func (o *outlierPeak) Observe(_ int64, e *tensor.Matrix) float64 {
	m := 0.0
	for _, v := range o.h.scores(e) {
		m = max(m, v)
	}
	return math.Log10(1 + m)
}
