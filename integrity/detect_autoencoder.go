package integrity

import (
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// The autoencoder detector's settings.
const (
	// aeWarmup batches are learnt from before any is scored.
	aeWarmup = 10
	// aeDecay is the weight of a batch in the running column moments and
	// the running mean reconstruction error after the warm-up.
	aeDecay = 0.1
	// aeTau: a row whose reconstruction error exceeds aeTau times the
	// running mean error of earlier inlier rows is anomalous.
	aeTau = 10
	// aeLR is the autoencoder's Adam learning rate.
	aeLR = 0.01
	// aeSeed seeds its initial weights (the detector has no run seed; its
	// scores are a function of the embeddings it is shown).
	aeSeed = 0xae
)

func init() {
	RegisterDetector(DetectorSpec{Name: "autoencoder",
		Help: "VFLIP-style reconstruction error: a small autoencoder trained online on the party's earlier inlier embeddings; the share of the batch's rows whose error exceeds 10× the running mean error",
		New:  func() Detector { return &autoencoder{name: "autoencoder"} }})
}

// autoencoder scores a batch by how badly a small autoencoder, trained
// online on the party's earlier embeddings, reconstructs its rows (the
// identification part of VFLIP, Cho et al. 2024, for one party's
// embedding: VFLIP reconstructs one party's embedding from the others';
// with one passive party there is no other, so the embedding is
// reconstructed from itself through a bottleneck). Rows are standardised
// by the running column mean and variance (an average over the first ten
// batches, then exponential forgetting with weight 0.1; a variance is at
// least a tenth of the columns' mean); the network is d → h = max(2, ⌈d/4⌉)
// (ReLU) → d, with Adam at 0.01; a row's error is its mean squared
// reconstruction error over the columns. After the warm-up a batch scores
// the share of its rows whose error exceeds 10 × ē, ē the running mean
// error of earlier inlier rows (the peak variant: log10(1 + max_i err_i/ē),
// the worst row, for a backdoor that touches one or two rows a batch); the network, the moments and ē then
// learn from the batch's inlier rows only, so that a trigger that keeps
// coming is not learnt as normal.
type autoencoder struct {
	name      string
	peak      bool // score log10(1 + max_i err_i/ē) instead (the peak variant)
	batches   int
	mean, vr  []float64
	errMean   float64
	enc, dec  *nn.Dense
	relu      nn.ReLU
	opt       *nn.Adam
	params    []*nn.Param
	z, dy     tensor.Matrix
	err       []float64
	inlier    []bool
	inlierCnt int
}

func (a *autoencoder) Name() string { return a.name }

// Observe implements Detector.
func (a *autoencoder) Observe(_ int64, e *tensor.Matrix) float64 {
	if e.Rows == 0 || e.Cols == 0 {
		return 0
	}
	if len(a.mean) != e.Cols {
		a.reset(e.Cols)
	}
	warm := a.batches >= aeWarmup
	if a.batches > 0 {
		a.standardise(e)
		a.reconstruct()
	}
	score := 0.0
	a.inlier = buf.Grow(a.inlier, e.Rows)
	a.inlierCnt = 0
	for r := range e.Rows {
		a.inlier[r] = !warm || a.err[r] <= aeTau*a.errMean
		if a.inlier[r] {
			a.inlierCnt++
		} else {
			score++
		}
	}
	switch {
	case !warm:
		score = 0
	case a.peak:
		top := 0.0
		for r := range e.Rows {
			top = max(top, a.err[r])
		}
		score = math.Log10(1 + top/max(a.errMean, 1e-12))
	default:
		score /= float64(e.Rows)
	}
	a.learn(e, warm)
	return score
}

// reset starts afresh for embeddings of d columns.
func (a *autoencoder) reset(d int) {
	rng := rand.New(rand.NewPCG(aeSeed, uint64(d)))
	h := max(2, (d+3)/4)
	a.mean, a.vr, a.batches, a.errMean = make([]float64, d), make([]float64, d), 0, 0
	a.enc = nn.NewDense(d, h, nn.HeNormal, rng)
	a.enc.SkipInputGrad = true
	a.dec = nn.NewDense(h, d, nn.GlorotUniform, rng)
	a.params = append(append([]*nn.Param(nil), a.enc.Params()...), a.dec.Params()...)
	a.opt = nn.NewAdam(aeLR)
}

// standardise writes e's rows, standardised by the running moments,
// into a.z.
func (a *autoencoder) standardise(e *tensor.Matrix) {
	a.z.Resize(e.Rows, e.Cols)
	floor := 0.0
	for _, v := range a.vr {
		floor += v
	}
	floor = 0.1*floor/float64(len(a.vr)) + 1e-12
	for c := range e.Cols {
		s := 1 / math.Sqrt(max(a.vr[c], floor))
		for r := range e.Rows {
			a.z.Data[r*e.Cols+c] = float32((float64(e.Data[r*e.Cols+c]) - a.mean[c]) * s)
		}
	}
}

// reconstruct runs a.z through the network: a.err holds each row's mean
// squared error and a.dy the gradient of the batch's mean loss
// (Σ_i err_i / rows) with respect to the output.
func (a *autoencoder) reconstruct() {
	y := a.dec.Forward(a.relu.Forward(a.enc.Forward(&a.z)))
	rows, d := a.z.Rows, a.z.Cols
	a.err = buf.Grow(a.err, rows)
	a.dy.Resize(rows, d)
	for r := range rows {
		s := 0.0
		for c := range d {
			diff := float64(y.Data[r*d+c]) - float64(a.z.Data[r*d+c])
			s += diff * diff
			a.dy.Data[r*d+c] = float32(2 * diff / float64(d*rows))
		}
		a.err[r] = s / float64(d)
	}
}

// learn updates the moments, the running error and the network from e's
// inlier rows (every row during the warm-up).
func (a *autoencoder) learn(e *tensor.Matrix, warm bool) {
	w := aeDecay
	if !warm {
		w = 1 / float64(a.batches+1)
	}
	trained := a.batches > 0 && a.inlierCnt > 0
	if trained {
		// The loss over the inlier rows only: the others' gradient is 0,
		// and the mean is over the inliers.
		scale := float32(e.Rows) / float32(a.inlierCnt)
		errSum := 0.0
		for r := range e.Rows {
			row := a.dy.Data[r*e.Cols : (r+1)*e.Cols]
			if !a.inlier[r] {
				clear(row)
				continue
			}
			errSum += a.err[r]
			for c := range row {
				row[c] *= scale
			}
		}
		a.enc.Backward(a.relu.Backward(a.dec.Backward(&a.dy)))
		a.opt.Step(a.params)
		m := errSum / float64(a.inlierCnt)
		if a.batches == 1 {
			a.errMean = m
		} else {
			a.errMean = (1-w)*a.errMean + w*m
		}
	}
	a.batches++
	blendMoments(a.mean, a.vr, e, w, func(r int) bool { return a.inlier[r] })
}
