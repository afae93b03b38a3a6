package feature

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// streamMLP is the PCG stream of the MLP decoder's initialisation and
// hold-out split.
const streamMLP = 0xfea7317

func init() {
	Register("inverse_mlp", func() Attack { return &MLP{Hidden: 64, Steps: 400, LR: 3e-3, HoldOut: 0.2} })
}

// MLP is the learned inverse with a small neural decoder: the linear
// decoder's inputs and targets ([Linear]), inputs standardised with the
// auxiliary rows' means and deviations and numeric targets likewise, one
// hidden layer of Hidden ReLU units, fitted by full-batch Adam on the
// mean squared error over Steps steps on the auxiliary rows but a held-out
// share HoldOut, keeping the weights of the step with the smallest
// held-out error on the numeric targets (on all without any; checked
// every 10 steps). Guesses are decoded as the linear decoder's, dense
// ones clipped to the auxiliary range. Not tuned: on Criteo-shaped
// synthetic data with N = 1,000 it overfits and stays below the linear
// decoder (docs/methods/features.md).
type MLP struct {
	Hidden, Steps int
	LR            float32
	HoldOut       float64
	selCols       int // the targets the hold-out error reads (0: all)
}

// Name returns "inverse_mlp".
func (d *MLP) Name() string { return "inverse_mlp" }

// Reconstruct fits the decoder on in's auxiliary rows and predicts the
// evaluated rows.
func (d *MLP) Reconstruct(in *Input) (*Guess, error) {
	if in.AuxTruth == nil || in.AuxTruth.Rows < 2 {
		return nil, fmt.Errorf("feature: %s needs at least 2 auxiliary rows", d.Name())
	}
	pr, err := newProblem(in)
	if err != nil {
		return nil, err
	}
	xa, xe, y, n, p, m, rows, classes := pr.xa, pr.xe, pr.y, pr.n, pr.p, pr.m, pr.rows, pr.classes
	nd := in.AuxTruth.NumDense
	d.selCols = nd
	xMean, xSD := colMeans(xa, n, p), colSDs(xa, n, p)
	yMean, ySD := colMeans(y, n, m), colSDs(y, n, m)
	for j := nd; j < m; j++ { // indicators stay as they are
		yMean[j], ySD[j] = 0, 1
	}
	pred := make([]float64, rows*m)
	if p == 0 {
		for r := 0; r < rows; r++ {
			copy(pred[r*m:(r+1)*m], colMeans(y, n, m))
		}
	} else {
		if pred, err = d.fit(standardise(xa, xMean, xSD, n, p), standardise(y, yMean, ySD, n, m),
			standardise(xe, xMean, xSD, rows, p), n, p, m, rows, in.Seed); err != nil {
			return nil, err
		}
		for r := 0; r < rows; r++ {
			for j := 0; j < m; j++ {
				pred[r*m+j] = pred[r*m+j]*ySD[j] + yMean[j]
			}
		}
	}
	g := decode(pred, rows, m, nd, classes)
	clipToRange(g.Dense, in.AuxTruth.Dense, nd)
	return g, nil
}

// fit trains the network on (x, y) (n rows; standardised) and returns its
// predictions for xe (rows rows).
func (d *MLP) fit(x, y, xe []float32, n, p, m, rows int, seed uint64) ([]float64, error) {
	if d.Hidden < 1 || d.Steps < 1 || !(d.LR > 0) || d.HoldOut < 0 || d.HoldOut >= 1 {
		return nil, fmt.Errorf("feature: %s with %d hidden units, %d steps, learning rate %g, hold-out %g", d.Name(), d.Hidden, d.Steps, d.LR, d.HoldOut)
	}
	rng := rand.New(rand.NewPCG(seed, streamMLP))
	perm := rng.Perm(n)
	hold := int(d.HoldOut * float64(n))
	if n-hold < 1 {
		hold = 0
	}
	fitRows, holdRows := perm[hold:], perm[:hold]
	pick := func(v []float32, idx []int, c int) *tensor.Matrix {
		out := tensor.New(len(idx), c)
		for i, r := range idx {
			copy(out.Row(i), v[r*c:(r+1)*c])
		}
		return out
	}
	xf, yf := pick(x, fitRows, p), pick(y, fitRows, m)
	xh, yh := pick(x, holdRows, p), pick(y, holdRows, m)
	l1, relu, l2 := nn.NewDense(p, d.Hidden, nn.HeNormal, rng), &nn.ReLU{}, nn.NewDense(d.Hidden, m, nn.GlorotUniform, rng)
	params := append(slices.Clone(l1.Params()), l2.Params()...)
	opt := nn.NewAdam(d.LR)
	forward := func(in *tensor.Matrix) *tensor.Matrix { return l2.Forward(relu.Forward(l1.Forward(in))) }
	// The held-out error is over the selection's targets: the numeric
	// ones when there are any (as the linear decoder's λ).
	sel := m
	if d.selCols > 0 {
		sel = d.selCols
	}
	mse := func(out, want *tensor.Matrix) float64 {
		var s float64
		for r := 0; r < out.Rows; r++ {
			for j := 0; j < sel; j++ {
				e := float64(out.Data[r*m+j] - want.Data[r*m+j])
				s += e * e
			}
		}
		return s / float64(max(out.Rows, 1))
	}
	best := math.Inf(1)
	var kept []*tensor.Matrix
	keep := func() {
		kept = kept[:0]
		for _, q := range params {
			kept = append(kept, q.W.Clone())
		}
	}
	grad := tensor.New(len(fitRows), m)
	for step := 0; step <= d.Steps; step++ {
		if hold > 0 && step%10 == 0 {
			if e := mse(forward(xh), yh); e < best {
				best = e
				keep()
			}
		}
		if step == d.Steps {
			break
		}
		out := forward(xf)
		scale := 2 / float32(len(fitRows))
		for i, v := range out.Data {
			grad.Data[i] = scale * (v - yf.Data[i])
		}
		l1.Backward(relu.Backward(l2.Backward(grad)))
		opt.Step(params)
	}
	if hold > 0 {
		for i, q := range params {
			copy(q.W.Data, kept[i].Data)
		}
	}
	out := forward(pick(xe, seq(rows), p))
	if err := tensor.CheckFinite("feature: MLP decoder output", out); err != nil {
		return nil, err
	}
	pred := make([]float64, len(out.Data))
	for i, v := range out.Data {
		pred[i] = float64(v)
	}
	return pred, nil
}

// colSDs returns the column standard deviations of an n×c row-major
// matrix (1 for a constant column).
func colSDs(v []float64, n, c int) []float64 {
	mean := colMeans(v, n, c)
	out := make([]float64, c)
	for r := 0; r < n; r++ {
		for j := 0; j < c; j++ {
			e := v[r*c+j] - mean[j]
			out[j] += e * e
		}
	}
	for j := range out {
		out[j] = math.Sqrt(out[j] / float64(n))
		if out[j] < 1e-12 {
			out[j] = 1
		}
	}
	return out
}

// standardise returns (v − mean)/sd per column as float32.
func standardise(v, mean, sd []float64, n, c int) []float32 {
	out := make([]float32, n*c)
	for r := 0; r < n; r++ {
		for j := 0; j < c; j++ {
			out[r*c+j] = float32((v[r*c+j] - mean[j]) / sd[j])
		}
	}
	return out
}

// seq returns 0, 1, …, n−1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
