package feature

import (
	"errors"
	"fmt"
	"image"
	"image/color"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// MaxEvalImages is the most test images an [ImageEvaluator] reconstructs
// at an evaluation: a larger test split is represented by a seeded
// uniform sample of this many, the same at every evaluation.
const MaxEvalImages = 2000

// Images returns FSHA's reconstruction f̃⁻¹(e) of the images whose
// embeddings are the rows of e, pixels clipped to [0, 1] (valid until
// the next call); before its first training step, the public images'
// mean image for every row.
func (f *FSHA) Images(e *tensor.Matrix) (*tensor.Matrix, error) {
	if !f.image {
		return nil, errors.New("feature: FSHA was built for table rows, not images")
	}
	if e.Cols != f.d {
		return nil, fmt.Errorf("feature: FSHA built for a %d-wide cut, given %d-wide embeddings", f.d, e.Cols)
	}
	m := f.pub.Cols
	f.pix.Resize(e.Rows, m)
	if !f.started {
		for r := range e.Rows {
			for j, v := range f.mean {
				f.pix.Data[r*m+j] = float32(v)
			}
		}
		return &f.pix, nil
	}
	out := f.dec.forward(e)
	if err := tensor.CheckFinite("feature: FSHA decoder output", out); err != nil {
		return nil, err
	}
	for i, v := range out.Data {
		f.pix.Data[i] = min(max(v, 0), 1)
	}
	return &f.pix, nil
}

// PilotCodes returns the pilot encoder's codes f̃(x) of the first n
// public rows (valid until the next call; nil before the first training
// step).
func (f *FSHA) PilotCodes(n int) (*tensor.Matrix, error) {
	if !f.started {
		return nil, nil
	}
	return f.encode(seq(min(n, f.pub.Rows)))
}

// ImageEvaluator scores an image hijacker (FSHA) at every evaluation of
// a run: its public images are n of the training images (AuxRows by the
// seed), and it reconstructs the test images (at most MaxEvalImages, a
// seeded sample of more), which the attacker never holds, from their
// embeddings by the bottom of the moment.
type ImageEvaluator struct {
	train, test *data.Features
	aux, eval   []int
	truth       *tensor.Matrix // the evaluated test images
	pub         *tensor.Matrix // the public images
	prior       []float32      // the public images' mean image
	chunk       int
	emb         tensor.Matrix
	fsha        *FSHA
	last        *tensor.Matrix // the reconstructions of the last Run
}

// NewImageEvaluator returns the evaluator on the passive party's training
// and test images, with n public images drawn by seed and chunk rows per
// forward pass.
func NewImageEvaluator(train, test *data.Features, n int, seed uint64, chunk int) (*ImageEvaluator, error) {
	if train == nil || test == nil || train.Image == nil || test.Image == nil {
		return nil, errors.New("feature: the image evaluator needs the passive party's training and test images")
	}
	if train.NumDense != test.NumDense {
		return nil, fmt.Errorf("feature: training images of %d values, test images of %d", train.NumDense, test.NumDense)
	}
	ev := &ImageEvaluator{train: train, test: test, chunk: chunk}
	var err error
	if ev.aux, err = AuxRows(train.Rows, n, seed); err != nil {
		return nil, err
	}
	if test.Rows > MaxEvalImages {
		if ev.eval, err = sampleRows(test.Rows, MaxEvalImages, seed, streamEval); err != nil {
			return nil, err
		}
	} else {
		ev.eval = seq(test.Rows)
	}
	ev.truth = gatherDense(test, ev.eval)
	ev.pub = gatherDense(train, ev.aux)
	m := train.NumDense
	ev.prior = make([]float32, m)
	for i, v := range colMeans(toFloat64(ev.pub), len(ev.aux), m) {
		ev.prior[i] = float32(v)
	}
	return ev, nil
}

// gatherDense returns the dense values of the given rows of x.
func gatherDense(x *data.Features, rows []int) *tensor.Matrix {
	var b data.Batch
	x.Gather(rows, &b)
	return b.Dense
}

// AuxTruth returns the public images (the attacker's).
func (ev *ImageEvaluator) AuxTruth() *data.Features {
	return selectRows(ev.train, ev.aux)
}

// SetHijacker sets the FSHA whose reconstructions are scored.
func (ev *ImageEvaluator) SetHijacker(f *FSHA) { ev.fsha = f }

// Run embeds the evaluated test images with enc, reconstructs them with
// the hijacker and returns, under "fsha/": mse (mean squared pixel error),
// mse_prior (that of the public images' mean image), r2_mean (R²
// pooled over the pixels: ImageScores), r2_own_mean (0: the active party holds no column
// of an image), and code_gap (wassersteinGap between the embeddings and
// the pilot's codes of as many public images: what the hijack drives
// down), with the critic's last Wasserstein estimate (critic_w).
func (ev *ImageEvaluator) Run(enc Encoder) (map[string]float64, error) {
	if ev.fsha == nil {
		return nil, errors.New("feature: the image evaluator has no hijacker to score")
	}
	if err := Embed(enc, ev.test, ev.eval, ev.chunk, &ev.emb); err != nil {
		return nil, fmt.Errorf("FSHA on images: test images: %w", err)
	}
	guess, err := ev.fsha.Images(&ev.emb)
	if err != nil {
		return nil, err
	}
	ev.last = guess
	mse, r2 := ImageScores(ev.truth, guess)
	figs := map[string]float64{"fsha/mse": mse, "fsha/mse_prior": priorMSE(ev.truth, ev.prior),
		"fsha/r2_mean": r2, "fsha/r2_own_mean": 0}
	figs["fsha/critic_w"], _ = ev.fsha.Critic()
	if n := min(ev.pub.Rows, ev.emb.Rows); n > 1 {
		codes, err := ev.fsha.PilotCodes(n)
		if err != nil {
			return nil, err
		}
		if codes != nil {
			figs["fsha/code_gap"] = wassersteinGap(headRows(&ev.emb, n), codes)
		}
	}
	return figs, nil
}

// headRows returns the first n rows of m (sharing its storage).
func headRows(m *tensor.Matrix, n int) *tensor.Matrix {
	return tensor.FromSlice(n, m.Cols, m.Data[:n*m.Cols])
}

// ImageScores returns the mean squared error of guess against truth (same
// shape, one image a row) over every value, and R² pooled over the
// pixels: 1 − Σ_pixels SSE / Σ_pixels SST, SST a pixel's squared
// deviations from its mean over the rows (the share of the images'
// variance the guess explains; the per-pixel mean image scores 0; 0 when
// no pixel varies).
func ImageScores(truth, guess *tensor.Matrix) (mse, r2 float64) {
	m := truth.Cols
	mean := colMeans(toFloat64(truth), truth.Rows, m)
	var sst float64
	for i, v := range truth.Data {
		d := float64(v - guess.Data[i])
		mse += d * d
		c := float64(v) - mean[i%m]
		sst += c * c
	}
	if sst > 0 {
		r2 = 1 - mse/sst
	}
	return mse / float64(len(truth.Data)), r2
}

// priorMSE is the mean squared error of guessing the image prior for
// every row of truth.
func priorMSE(truth *tensor.Matrix, prior []float32) float64 {
	var s float64
	for i, v := range truth.Data {
		d := float64(v - prior[i%truth.Cols])
		s += d * d
	}
	return s / float64(len(truth.Data))
}

// Grid returns a picture of the first n evaluated test images (top row)
// above their reconstructions at the last Run (bottom row), one pixel a
// value; nil before a Run.
func (ev *ImageEvaluator) Grid(n int) image.Image {
	if ev.last == nil {
		return nil
	}
	n = min(n, ev.truth.Rows)
	sh := ev.test.Image
	w, h := sh.Width, sh.Height
	img := image.NewRGBA(image.Rect(0, 0, n*(w+1), 2*h+1))
	for k, m := range []*tensor.Matrix{ev.truth, ev.last} {
		for i := range n {
			row := m.Row(i)
			for y := range h {
				for x := range w {
					var c [3]uint8
					for ch := range 3 {
						v := row[(y*w+x)*sh.Channels+min(ch, sh.Channels-1)]
						c[ch] = uint8(min(max(v, 0), 1)*255 + 0.5)
					}
					img.Set(i*(w+1)+x, k*(h+1)+y, color.RGBA{c[0], c[1], c[2], 255})
				}
			}
		}
	}
	return img
}
