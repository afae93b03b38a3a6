package model

import (
	"math"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// The wide part's numeric columns, standardised (Config.WideStandardise).
//
// The reader scales every numeric column to [0, 1] by its training range
// (min–max), which the deep part reads. A skewed column — a ratio whose
// maximum is ten times its 99th percentile — then keeps most of its
// values in a sliver of [0, 1], and the wide part's linear weight on it
// must be many times larger than on a standardised column for the same
// effect. Adam moves each weight by about its learning rate per step
// whatever the gradient's scale, so such a weight needs thousands of
// steps; on a small table the deep part has memorised the training rows
// and early stopping has ended the run long before
// (experiments/own-data.md, "The cause"). Standardising the wide part's
// input — z = (x − mean)·(1/sd) with the active party's training rows'
// mean and standard deviation, the encoding of the logistic baseline —
// makes every linear weight of order one, reached in a few hundred steps.
// The deep part's input is unchanged.

// wideScale is the standardisation of the wide part's dense columns:
// per column the training mean and the reciprocal of the standard
// deviation (0 for a column constant in the training rows, which then
// contributes nothing, as in the baseline).
type wideScale struct {
	meanInv []float32     // the means, then the reciprocal deviations
	z       tensor.Matrix // B×NumDense standardised batch
}

// newWideScale returns the standardisation of x's dense columns over its
// rows (sums in float64). Without rows it is the identity, until a
// checkpoint's statistics are loaded over it.
func newWideScale(x *data.Features) *wideScale {
	k := x.NumDense
	s := &wideScale{meanInv: make([]float32, 2*k)}
	for j := range k {
		var sum, sum2 float64
		for i := range x.Rows {
			v := float64(x.Dense[i*k+j])
			sum += v
			sum2 += v * v
		}
		mean, inv := 0.0, 1.0
		if x.Rows > 0 {
			n := float64(x.Rows)
			mean = sum / n
			sd := math.Sqrt(max(0, sum2/n-mean*mean))
			inv = 0
			if sd > 1e-12 {
				inv = 1 / sd
			}
		}
		s.meanInv[j], s.meanInv[k+j] = float32(mean), float32(inv)
	}
	return s
}

// apply returns the standardised copy of the batch's dense block x.
func (s *wideScale) apply(x *tensor.Matrix) *tensor.Matrix {
	k := x.Cols
	mean, inv := s.meanInv[:k], s.meanInv[k:]
	s.z.Resize(x.Rows, k)
	for i := range x.Rows {
		r, z := x.Row(i), s.z.Row(i)
		for j, v := range r {
			z[j] = (v - mean[j]) * inv[j]
		}
	}
	return &s.z
}
