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
			Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "ressfl_bottleneck", Symbol: "b", Help: "ResSFL bottleneck: the embedding sent is the bottom's through a learned rank-b linear map (default: none)",
				Int: true, Min: 1, Max: math.Inf(1)},
			{Key: "ressfl_decoder_steps", Symbol: "K", Help: "ResSFL: Adam steps of the simulated decoder per training batch (default 1)",
				Int: true, Min: 1, Max: 1000},
			{Key: "ressfl_threshold", Symbol: "τ", Help: "ResSFL bounded form: the bottom lowers the simulated decoder's batch R² = 1 − R/V only while it exceeds τ (default: the unbounded −λ·R)",
				Min: math.Inf(-1), Max: 1, MaxOpen: true},
			{Key: "ressfl_warmup", Symbol: "W", Help: "ResSFL: training batches in which the simulated decoder is trained before the bottom is pushed against it (its pre-training; default 0)",
				Int: true, Min: 0, Max: math.Inf(1)}},
		NewPassiveOutput: func(p Params, o InputOptions) (PassiveOutput, error) {
			opt := ResSFLOptions{Bottleneck: int(p.Get("ressfl_bottleneck")), DecoderSteps: 1, Warmup: int64(p.Get("ressfl_warmup")),
				Bounded: p.Has("ressfl_threshold"), Threshold: p.Get("ressfl_threshold")}
			if p.Has("ressfl_decoder_steps") {
				opt.DecoderSteps = int(p.Get("ressfl_decoder_steps"))
			}
			return NewResSFLWith(o.CutDim, o.DenseFeatures, p.Get("ressfl_lambda"), o.LR, o.Seed, opt)
		}})
}

// ResSFLOptions are ResSFL's settings beyond λ.
type ResSFLOptions struct {
	// Bottleneck, if positive, is the rank b of a learned linear map
	// e ↦ e·W_d·W_u (d → b → d, no bias) through which the bottom's
	// embedding passes before it is sent and before the decoder reads it:
	// Li et al.'s bottleneck layer at the cut.
	Bottleneck int
	// DecoderSteps is the simulated decoder's Adam steps per training
	// batch (at least 1).
	DecoderSteps int
	// Warmup is the training batches in which only the decoder learns
	// from the embeddings (the bottom receives the task gradient alone):
	// the simulated attacker is trained before the min-max starts.
	Warmup int64
	// Bounded selects Li et al.'s bounded form: instead of maximising the
	// decoder's error R the bottom adds λ·max(0, s − Threshold) to its
	// loss, s = 1 − R/V the decoder's R² on the batch (V the batch's mean
	// squared deviation of the dense columns from their batch means): it
	// pushes only while the simulated attacker does better than the
	// threshold, as Li et al.'s code does with SSIM and its threshold.
	Bounded   bool
	Threshold float64
}

// ressflStateTag versions ResSFL's saved state.
const ressflStateTag = "splitguard/ressfl/v2"

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
// update), so that the embedding it sends is hard to invert. Without a
// bottleneck the embedding is sent unchanged. The decoder reads the dense columns only
// (a categorical column has no squared error; NoPeek covers both).
//
// With [ResSFLOptions]: a bottleneck (the decoder reads, and the active
// party receives, z = e·W_d·W_u of rank b, W_d and W_u trained by Adam
// at lr on the gradient the bottleneck's output receives), several decoder
// steps per batch, and a warm-up in which the decoder is trained
// alone. Li et al. pre-train the feature extractor against the attacker on
// another data set and transfer it (resistance transfer); the warm-up
// pre-trains the simulated attacker only, on the run's own first batches.
type ResSFL struct {
	lambda float64
	d, k   int
	opts   ResSFLOptions
	seen   int64 // training batches so far
	// variance is V of the last training batch's dense columns
	// (batchVariance), for the bounded form.
	variance float64

	bn       []*nn.Param // W_d (d×b), W_u (b×d) when opts.Bottleneck > 0
	bnOpt    *nn.Adam
	bnPend   bool
	h        tensor.Matrix // e·W_d at the last training Forward
	z, evalZ tensor.Matrix // the bottleneck's output (training, evaluation)
	gz, dh   tensor.Matrix
	evalH    tensor.Matrix

	enc, out *nn.Dense
	relu     nn.ReLU
	params   []*nn.Param
	opt      *nn.Adam

	dense   *tensor.Matrix
	e       tensor.Matrix // the last training Forward's embedding (the bottom's)
	dy      tensor.Matrix // ∂R/∂(D's output)
	grad    tensor.Matrix
	aud     tensor.Matrix
	gradE   []float64 // ∂R/∂e at the decoder before its update
	loss    float64
	trained bool
	pending bool
}

// NewResSFL returns ResSFL for embeddings of width d and k dense feature
// columns, with weight lambda > 0, the decoder trained by Adam at lr, one
// step a batch, no bottleneck and no warm-up.
func NewResSFL(d, k int, lambda float64, lr float32, seed uint64) (*ResSFL, error) {
	return NewResSFLWith(d, k, lambda, lr, seed, ResSFLOptions{DecoderSteps: 1})
}

// NewResSFLWith is NewResSFL with the options o.
func NewResSFLWith(d, k int, lambda float64, lr float32, seed uint64, o ResSFLOptions) (*ResSFL, error) {
	switch {
	case o.Bottleneck < 0:
		return nil, fmt.Errorf("ResSFL: bottleneck of rank %d (key ressfl_bottleneck)", o.Bottleneck)
	case o.DecoderSteps < 1:
		return nil, fmt.Errorf("ResSFL: %d decoder steps a batch, want at least 1 (key ressfl_decoder_steps)", o.DecoderSteps)
	case o.Warmup < 0:
		return nil, fmt.Errorf("ResSFL: a warm-up of %d batches (key ressfl_warmup)", o.Warmup)
	case o.Bounded && !(o.Threshold < 1 && o.Threshold > math.Inf(-1)):
		return nil, fmt.Errorf("ResSFL: R² threshold %v, want a finite value below 1 (key ressfl_threshold)", o.Threshold)
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
	r := &ResSFL{lambda: lambda, d: d, k: k, opts: o, opt: nn.NewAdam(lr),
		enc: nn.NewDense(d, h, nn.HeNormal, init), out: nn.NewDense(h, k, nn.GlorotUniform, init)}
	r.params = append(r.enc.Params(), r.out.Params()...)
	r.opt.Init(r.params)
	if b := o.Bottleneck; b > 0 {
		// Glorot-uniform factors: W_d·W_u starts as a random rank-b map
		// of about unit gain.
		down, up := nn.NewDense(d, b, nn.GlorotUniform, init), nn.NewDense(b, d, nn.GlorotUniform, init)
		r.bn = []*nn.Param{{Name: "ressfl.Wd", W: down.W, G: tensor.New(d, b)}, {Name: "ressfl.Wu", W: up.W, G: tensor.New(b, d)}}
		r.bnOpt = nn.NewAdam(lr)
		r.bnOpt.Init(r.bn)
	}
	return r, nil
}

// through returns e·W_d·W_u into z (h the middle), or e without a
// bottleneck.
func (r *ResSFL) through(e, h, z *tensor.Matrix) *tensor.Matrix {
	if r.bn == nil {
		return e
	}
	h.Resize(e.Rows, r.opts.Bottleneck)
	tensor.MatMul(h, e, false, r.bn[0].W, false, 1, 0)
	z.Resize(e.Rows, r.d)
	tensor.MatMul(z, h, false, r.bn[1].W, false, 1, 0)
	return z
}

// lambdaNow is λ, or 0 during the warm-up.
func (r *ResSFL) lambdaNow() float64 {
	if r.opts.Bounded && r.seen > r.opts.Warmup {
		// λ·(s − τ) with s = 1 − R/V: its gradient is −(λ/V)·∂R/∂z while
		// s > τ, none below.
		if r.variance <= 0 || 1-r.loss/r.variance <= r.opts.Threshold {
			return 0
		}
		return r.lambda / r.variance
	}
	if r.seen <= r.opts.Warmup {
		return 0
	}
	return r.lambda
}

// Name returns "ressfl".
func (*ResSFL) Name() string { return "ressfl" }

// SetFeatures implements FeatureReader: the decoder's targets are the
// batch's dense columns.
func (r *ResSFL) SetFeatures(dense *tensor.Matrix, _ []int32, _ int) { r.dense = dense }

// Forward returns e unchanged (through the bottleneck when there is
// one); in training it keeps e, evaluates the decoder's error R and its
// gradient with respect to what is sent.
func (r *ResSFL) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if e.Cols != r.d {
		return nil, fmt.Errorf("ResSFL: a %d-wide embedding, built for %d", e.Cols, r.d)
	}
	if !training {
		return r.through(e, &r.evalH, &r.evalZ), nil
	}
	if r.dense == nil || r.dense.Rows != e.Rows || r.dense.Cols != r.k {
		return nil, fmt.Errorf("ResSFL: the features given are not the %d dense columns of the %d embedding rows", r.k, e.Rows)
	}
	r.e.Resize(e.Rows, e.Cols)
	copy(r.e.Data, e.Data)
	sent := r.through(&r.e, &r.h, &r.z)
	r.loss = r.reconstruct(sent)
	r.variance = batchVariance(r.dense)
	r.seen++
	r.trained, r.pending = true, false
	if r.bn == nil {
		return e, nil
	}
	return sent, nil
}

// reconstruct runs the decoder on the sent embedding z against r.dense,
// sets the decoder's parameter gradients and r.gradE = ∂R/∂z, and
// returns R.
func (r *ResSFL) reconstruct(z *tensor.Matrix) float64 {
	y := r.out.Forward(r.relu.Forward(r.enc.Forward(z)))
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

// Backward returns g − λ·∂R/∂z at the last training Forward (λ 0 during
// the warm-up), through the bottleneck when there is one (whose
// parameter gradients it sets), and readies the decoder's step.
func (r *ResSFL) Backward(g *tensor.Matrix) (*tensor.Matrix, error) {
	out, err := r.backward(g, &r.grad, true)
	if err == nil {
		r.pending, r.bnPend = true, r.bn != nil
	}
	return out, err
}

// Backprop is Backward into separate buffers, leaving the parameter
// gradients and the steps alone.
func (r *ResSFL) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) {
	return r.backward(g, &r.aud, false)
}

func (r *ResSFL) backward(g, dst *tensor.Matrix, params bool) (*tensor.Matrix, error) {
	if !r.trained {
		return nil, errors.New("ResSFL: backward before a training forward")
	}
	if g.Rows != r.e.Rows || g.Cols != r.e.Cols {
		return nil, fmt.Errorf("ResSFL: backward of a %d×%d gradient after a %d×%d forward", g.Rows, g.Cols, r.e.Rows, r.e.Cols)
	}
	lam := r.lambdaNow()
	gz := dst
	if r.bn != nil {
		gz = &r.gz
	}
	gz.Resize(g.Rows, g.Cols)
	for i, v := range g.Data {
		gz.Data[i] = float32(float64(v) - lam*r.gradE[i])
	}
	if r.bn == nil {
		return dst, nil
	}
	// z = h·W_u, h = e·W_d: ∂W_u = hᵀ·gz, ∂h = gz·W_uᵀ, ∂W_d = eᵀ·∂h,
	// ∂e = ∂h·W_dᵀ.
	r.dh.Resize(g.Rows, r.opts.Bottleneck)
	tensor.MatMul(&r.dh, gz, false, r.bn[1].W, true, 1, 0)
	if params {
		tensor.MatMul(r.bn[1].G, &r.h, true, gz, false, 1, 0)
		tensor.MatMul(r.bn[0].G, &r.e, true, &r.dh, false, 1, 0)
	}
	dst.Resize(g.Rows, r.d)
	tensor.MatMul(dst, &r.dh, false, r.bn[0].W, true, 1, 0)
	return dst, nil
}

// RegLoss is −λ·R of the last training Forward (the term in the
// passive's objective; 0 during the warm-up), or in the bounded form
// λ·max(0, 1 − R/V − τ).
func (r *ResSFL) RegLoss() float64 {
	if r.opts.Bounded {
		if c := r.lambdaNow(); c > 0 {
			return r.lambda * (1 - r.loss/r.variance - r.opts.Threshold)
		}
		return 0
	}
	return -r.lambdaNow() * r.loss
}

// batchVariance is V = (1/(B·k))·Σ_ij (x_ij − x̄_j)², x̄_j column j's
// mean over the batch: R = V is the error of guessing the batch means.
func batchVariance(x *tensor.Matrix) float64 {
	return tensor.MeanColumnVariance(x)
}

// Reconstruction is R, the simulated decoder's mean squared error on the
// last training batch.
func (r *ResSFL) Reconstruction() float64 { return r.loss }

// Step moves the decoder DecoderSteps Adam steps down R on the last
// training batch (the first at the gradients of the Forward, each further
// one at the gradients recomputed after the previous), and the
// bottleneck one step down the loss.
func (r *ResSFL) Step() error {
	if err := adamStep("ResSFL", &r.pending, r.params, r.opt); err != nil {
		return err
	}
	sent := &r.e
	if r.bn != nil {
		sent = &r.z
	}
	for range r.opts.DecoderSteps - 1 {
		r.reconstruct(sent)
		r.opt.Step(r.params)
	}
	if r.bnPend {
		r.bnOpt.Step(r.bn)
		r.bnPend = false
	}
	return nil
}

// Save writes the decoder's shape, weights and Adam state.
func (r *ResSFL) Save(w io.Writer) error {
	sw := &stateWriter{}
	sw.str(ressflStateTag)
	sw.u32(r.d)
	sw.u32(r.k)
	sw.u32(r.opts.Bottleneck)
	sw.u64(uint64(r.seen))
	writeParams(sw, r.params, r.opt)
	if r.bn != nil {
		writeParams(sw, r.bn, r.bnOpt)
	}
	_, err := w.Write(sw.b)
	return err
}

// Load restores what Save wrote into a ResSFL of the same shape.
func (r *ResSFL) Load(rd io.Reader) error {
	sr, err := readState(rd, ressflStateTag, "ressfl")
	if err != nil {
		return err
	}
	if d, k := sr.u32(), sr.u32(); sr.err == nil && (d != r.d || k != r.k) {
		sr.err = fmt.Errorf("a decoder of %d→%d, this one is %d→%d", d, k, r.d, r.k)
	}
	if b := sr.u32(); sr.err == nil && b != r.opts.Bottleneck {
		sr.err = fmt.Errorf("a bottleneck of rank %d, this one has %d (0: none)", b, r.opts.Bottleneck)
	}
	seen := sr.u64()
	apply := readParams(sr, r.params, r.opt)
	applyBN := func() {}
	if r.bn != nil {
		applyBN = readParams(sr, r.bn, r.bnOpt)
	}
	if err := sr.done(); err != nil {
		return err
	}
	apply()
	applyBN()
	r.seen = int64(seen)
	r.pending, r.bnPend, r.trained = false, false, false
	return nil
}
