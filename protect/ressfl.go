package protect

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "ressfl", Color: 0x5d8aa8, Role: AddOn,
		Help: "ResSFL at the passive party: the passive trains a simulated inversion decoder on its own (embedding, dense features) pairs and its bottom maximises the decoder's error (a defence of the features)",
		Params: []Param{{Key: "ressfl_lambda", Symbol: "λ", Help: "ResSFL weight λ of the simulated decoder's reconstruction error subtracted from the passive's loss",
			Min: 0, MinOpen: true, Max: math.Inf(1)}},
		NewPassiveOutput: func(p Params, o InputOptions) (PassiveOutput, error) {
			return NewResSFL(o.CutDim, o.DenseFeatures, p.Get("ressfl_lambda"), o.LR, o.Seed)
		}})
}

// ressflStateTag versions ResSFL's saved state.
const ressflStateTag = "splitguard/ressfl/v1"

// ressflInitStream is the random stream of the decoder's initialisation.
const ressflInitStream = 0x7265_7373_666c // "ressfl"

// ResSFL is the adversarial reconstructor training of Li et al. (CVPR
// 2022) at the passive party's output: the passive party simulates the
// feature-inversion attacker with a decoder D from its embedding e to its
// own dense features x (d → h = max(16, d) ReLU → k), trained at every
// step to minimise the reconstruction error
//
//	R = (1/(B·k))·Σ_i ‖D(e_i) − x_i‖²,
//
// while its bottom minimises the task loss minus λ·R: to the gradient it
// receives it adds −λ·∂R/∂e (at the decoder's weights before this step's
// update), so that the embedding it sends is hard to invert. The
// embedding is sent unchanged. The decoder reads the dense columns only
// (a categorical column has no squared error; NoPeek covers both).
// Paper: the min-max of the feature extractor and a simulated attacker
// (its bottleneck layer and pre-training are not built).
type ResSFL struct {
	lambda float64
	d, k   int

	enc, out *nn.Dense
	relu     nn.ReLU
	params   []*nn.Param
	opt      *nn.Adam

	dense   *tensor.Matrix
	e       tensor.Matrix // the last training Forward's embedding
	dy      tensor.Matrix // ∂R/∂(D's output)
	grad    tensor.Matrix
	aud     tensor.Matrix
	gradE   []float64 // ∂R/∂e at the decoder before its update
	loss    float64
	trained bool
	pending bool
}

// NewResSFL returns ResSFL for embeddings of width d and k dense feature
// columns, with weight lambda > 0, the decoder trained by Adam at lr.
func NewResSFL(d, k int, lambda float64, lr float32, seed uint64) (*ResSFL, error) {
	switch {
	case !(lambda > 0) || math.IsInf(lambda, 0):
		return nil, configkey.Keyed(fmt.Errorf("ResSFL: λ = %v, want a finite λ > 0 (key ressfl_lambda)", lambda), "ressfl_lambda")
	case d < 1:
		return nil, fmt.Errorf("ResSFL: embedding width %d", d)
	case k < 1:
		return nil, configkey.Keyed(errors.New("ResSFL reconstructs the passive party's dense columns, and it has none (key ressfl_lambda)"), "ressfl_lambda")
	case !(lr > 0):
		return nil, fmt.Errorf("ResSFL: learning rate %v, want > 0", lr)
	}
	h := max(16, d)
	init := rand.New(rand.NewPCG(seed, ressflInitStream))
	r := &ResSFL{lambda: lambda, d: d, k: k, opt: nn.NewAdam(lr),
		enc: nn.NewDense(d, h, nn.HeNormal, init), out: nn.NewDense(h, k, nn.GlorotUniform, init)}
	r.params = append(r.enc.Params(), r.out.Params()...)
	r.opt.Init(r.params)
	return r, nil
}

// Name returns "ressfl".
func (*ResSFL) Name() string { return "ressfl" }

// SetFeatures implements FeatureReader: the decoder's targets are the
// batch's dense columns.
func (r *ResSFL) SetFeatures(dense *tensor.Matrix, _ []int32, _ int) { r.dense = dense }

// Forward returns e unchanged; in training it keeps e, evaluates the
// decoder's error R and its gradient with respect to e.
func (r *ResSFL) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if !training {
		return e, nil
	}
	if r.dense == nil || r.dense.Rows != e.Rows || r.dense.Cols != r.k {
		return nil, fmt.Errorf("ResSFL: the features given are not the %d dense columns of the %d embedding rows", r.k, e.Rows)
	}
	if e.Cols != r.d {
		return nil, fmt.Errorf("ResSFL: a %d-wide embedding, built for %d", e.Cols, r.d)
	}
	r.e.Resize(e.Rows, e.Cols)
	copy(r.e.Data, e.Data)
	r.loss = r.reconstruct()
	r.trained, r.pending = true, false
	return e, nil
}

// reconstruct runs the decoder on r.e against r.dense, sets the decoder's
// parameter gradients and r.gradE = ∂R/∂e, and returns R.
func (r *ResSFL) reconstruct() float64 {
	y := r.out.Forward(r.relu.Forward(r.enc.Forward(&r.e)))
	b, k := y.Rows, r.k
	r.dy.Resize(b, k)
	var sum float64
	scale := 2 / float64(b*k)
	for i, v := range y.Data {
		diff := float64(v) - float64(r.dense.Data[i])
		sum += diff * diff
		r.dy.Data[i] = float32(scale * diff)
	}
	gx := r.enc.Backward(r.relu.Backward(r.out.Backward(&r.dy)))
	if cap(r.gradE) < len(gx.Data) {
		r.gradE = make([]float64, len(gx.Data))
	}
	r.gradE = r.gradE[:len(gx.Data)]
	for i, v := range gx.Data {
		r.gradE[i] = float64(v)
	}
	return sum / float64(b*k)
}

// Backward returns g − λ·∂R/∂e at the last training Forward and readies
// the decoder's step.
func (r *ResSFL) Backward(g *tensor.Matrix) (*tensor.Matrix, error) {
	out, err := r.backward(g, &r.grad)
	if err == nil {
		r.pending = true
	}
	return out, err
}

// Backprop is Backward into a separate buffer, leaving the decoder's
// step alone.
func (r *ResSFL) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) { return r.backward(g, &r.aud) }

func (r *ResSFL) backward(g, dst *tensor.Matrix) (*tensor.Matrix, error) {
	if !r.trained {
		return nil, errors.New("ResSFL: backward before a training forward")
	}
	if g.Rows != r.e.Rows || g.Cols != r.e.Cols {
		return nil, fmt.Errorf("ResSFL: backward of a %d×%d gradient after a %d×%d forward", g.Rows, g.Cols, r.e.Rows, r.e.Cols)
	}
	dst.Resize(g.Rows, g.Cols)
	for i, v := range g.Data {
		dst.Data[i] = float32(float64(v) - r.lambda*r.gradE[i])
	}
	return dst, nil
}

// RegLoss is −λ·R of the last training Forward (the term in the
// passive's objective).
func (r *ResSFL) RegLoss() float64 { return -r.lambda * r.loss }

// Reconstruction is R, the simulated decoder's mean squared error on the
// last training batch.
func (r *ResSFL) Reconstruction() float64 { return r.loss }

// Step moves the decoder one Adam step down R.
func (r *ResSFL) Step() error {
	return adamStep("ResSFL", &r.pending, r.params, r.opt)
}

// Save writes the decoder's shape, weights and Adam state.
func (r *ResSFL) Save(w io.Writer) error {
	sw := &stateWriter{}
	sw.str(ressflStateTag)
	sw.u32(r.d)
	sw.u32(r.k)
	writeParams(sw, r.params, r.opt)
	_, err := w.Write(sw.b)
	return err
}

// Load restores what Save wrote into a ResSFL of the same shape.
func (r *ResSFL) Load(rd io.Reader) error {
	raw, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("protect: ressfl state: %w", err)
	}
	sr := &stateReader{b: raw, what: "ressfl"}
	sr.tag(ressflStateTag)
	if d, k := sr.u32(), sr.u32(); sr.err == nil && (d != r.d || k != r.k) {
		sr.err = fmt.Errorf("a decoder of %d→%d, this one is %d→%d", d, k, r.d, r.k)
	}
	apply := readParams(sr, r.params, r.opt)
	if err := sr.done(); err != nil {
		return err
	}
	apply()
	r.pending, r.trained = false, false
	return nil
}
