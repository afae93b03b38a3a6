package feature

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// streamFSHA is the PCG stream of FSHA's initial weights and its draws of
// public rows.
const streamFSHA = 0xf5a4

// FSHA is the feature-space hijacking attack of [Pasquini21] by a
// malicious active party: instead of training on its labels it sends the
// passive party gradients that turn the passive's bottom into an encoder
// the attacker can invert. The attacker holds public rows from the
// passive's feature distribution (here: the auxiliary rows of the feature
// attacks; table rows coded as the decoders' targets and standardised,
// images as their pixels in [0, 1]) and trains, at every training step,
// three networks of its own:
//
//   - a pilot encoder f̃ from features to the cut embedding's space (a
//     final ReLU when the passive's embeddings are non-negative, as a
//     ReLU cut layer's are) and a decoder f̃⁻¹ back, as an autoencoder
//     on a batch of public rows: ‖f̃⁻¹(f̃(x_pub)) − x_pub‖²;
//   - a Wasserstein critic D of embeddings with the gradient penalty of
//     [Gulrajani17] (WGAN-GP, as [Pasquini21]; weight Penalty 10, the
//     value of [Gulrajani17]: [Pasquini21]'s 500 kept this one-layer
//     critic from following the embeddings in the tests), the pilot's
//     f̃(x_pub) real and the passive's received f(x) fake (gpCritic);
//
// and answers the passive's batch with the gradient of the generator loss
// −mean_i D(f(x_i)) with respect to the embedding:
// the passive, descending it, moves its bottom's output distribution onto
// the pilot's latent space, where f̃⁻¹ decodes it. The reconstruction of a
// row is f̃⁻¹(e). Every network has one hidden layer of Hidden ReLU
// units (the paper's are convolutional, several layers deep); all are
// trained by Adam (the autoencoder at LR, the critic at DiscLR, both
// 1e-3 by default).
//
// An FSHA is one run's attacker: Gradient is its training step. On a
// table, as an [Attack] ("fsha"), its Reconstruct decodes the evaluated
// rows' embeddings with the decoder of the moment (the auxiliary rows it
// is given are ignored: it was built with its public rows); on images
// [ImageEvaluator] scores its [FSHA.Images].
type FSHA struct {
	Hidden     int
	LR, DiscLR float32
	Penalty    float64

	image bool // the public rows are images: pixels, not coded columns

	pub      *tensor.Matrix // public rows, coded and standardised
	pubDense []float32      // their raw dense columns (clipping guesses)
	pubX     *data.Features // the public rows as a bottom reads them (a pilot network's input)
	idx      []int          // the public rows of the batch
	numDense int
	classes  [][]int32
	mean, sd []float64

	rng        *rand.Rand
	d          int
	started    bool
	pilot, dec *mlp2
	net        Pilot // the pilot when set (SetPilot), else pilot
	batch      data.Batch
	critic     *gpCritic
	aeParams   []*nn.Param
	aeOpt      *nn.Adam
	wass, gp   float64 // the critic's last Wasserstein estimate and penalty

	xb, xe, recon, grad, pix tensor.Matrix
	dLogits, eps             []float32
}

// NewFSHA returns the attacker of a run whose cut embedding is d wide,
// with pub the passive features of its public rows (at least 2; a table's
// rows or images), seeded by seed.
func NewFSHA(pub *data.Features, d int, seed uint64) (*FSHA, error) {
	if pub == nil || pub.Rows < 2 {
		return nil, errors.New("feature: FSHA needs at least 2 public rows")
	}
	if d < 1 {
		return nil, fmt.Errorf("feature: FSHA for a cut of width %d", d)
	}
	f := &FSHA{Hidden: 128, LR: 1e-3, DiscLR: 1e-3, Penalty: 10, d: d, numDense: pub.NumDense,
		pubDense: slices.Clone(pub.Dense), pubX: pub, rng: rand.New(rand.NewPCG(seed, streamFSHA))}
	n := pub.Rows
	if pub.Image != nil {
		if pub.NumDense == 0 || pub.NumCat != 0 {
			return nil, fmt.Errorf("feature: FSHA: images of %d pixel values and %d categorical columns", pub.NumDense, pub.NumCat)
		}
		f.image, f.Hidden = true, 256
		f.pub = tensor.FromSlice(n, pub.NumDense, slices.Clone(pub.Dense))
		f.mean = colMeans(toFloat64(f.pub), n, pub.NumDense)
		return f, nil
	}
	f.classes = levelsOf(pub, TargetClasses)
	y, m := targets(pub, f.classes)
	if m == 0 {
		return nil, errors.New("feature: FSHA: the passive party has no column")
	}
	f.mean, f.sd = colMeans(y, n, m), colSDs(y, n, m)
	f.pub = tensor.FromSlice(n, m, standardise(y, f.mean, f.sd, n, m))
	return f, nil
}

// Name returns "fsha".
func (*FSHA) Name() string { return "fsha" }

// start builds the networks at the first batch, the pilot's output like
// the embeddings received (non-negative: a final ReLU).
func (f *FSHA) start(e *tensor.Matrix) {
	m := f.pub.Cols
	nonNeg := !slices.ContainsFunc(e.Data, func(v float32) bool { return v < 0 })
	f.dec = newMLP2(f.d, f.Hidden, m, false, f.rng)
	f.critic = newGPCritic(f.d, f.Hidden, f.Penalty, f.DiscLR, f.rng)
	f.aeOpt = nn.NewAdam(f.LR)
	f.started = true
	if f.net != nil {
		f.aeParams = slices.Clone(f.dec.params)
		return
	}
	f.pilot = newMLP2(m, f.Hidden, f.d, nonNeg, f.rng)
	f.aeParams = append(slices.Clone(f.pilot.params), f.dec.params...)
	// The pilot's codes start at the scale of the embeddings received:
	// its last layer (ReLU is positively homogeneous) is scaled so that
	// the codes of the first public rows have the batch's mean squared
	// row norm.
	codes := f.pilot.forward(headRows(f.pub, min(f.pub.Rows, 256))) // before any encode: no buffer shared
	if want, got := meanSquaredNorm(e), meanSquaredNorm(codes); want > 0 && got > 0 {
		k := float32(math.Sqrt(want / got))
		for _, p := range f.pilot.l2.Params() {
			for i := range p.W.Data {
				p.W.Data[i] *= k
			}
		}
	}
}

// meanSquaredNorm is the mean over m's rows of their squared norms.
func meanSquaredNorm(m *tensor.Matrix) float64 {
	var s float64
	for _, v := range m.Data {
		s += float64(v) * float64(v)
	}
	return s / float64(m.Rows)
}

// Gradient is one hijacking step on the passive party's batch embedding e
// (B×d): it returns the gradient to send (∂ of the generator loss with
// respect to e, valid until the next call), then trains the critic on e
// against the pilot's codes of B public rows and the autoencoder on
// those rows.
func (f *FSHA) Gradient(e *tensor.Matrix) (*tensor.Matrix, error) {
	if e.Cols != f.d || e.Rows == 0 {
		return nil, fmt.Errorf("feature: FSHA built for a %d-wide cut, given a %d×%d embedding", f.d, e.Rows, e.Cols)
	}
	if !f.started {
		f.start(e)
	}
	B, m := e.Rows, f.pub.Cols
	// The passive's gradient: of the generator loss −mean_i D(e_i) at the
	// current critic.
	f.dLogits = fill(f.dLogits, B, -1/float32(B))
	f.critic.forward(e)
	g := f.critic.slope(f.dLogits)
	f.grad.Resize(B, f.d)
	copy(f.grad.Data, g.Data)

	// A batch of public rows and the pilot's codes of them.
	f.xb.Resize(B, m)
	f.idx = f.idx[:0]
	for i := range B {
		r := f.rng.IntN(f.pub.Rows)
		f.idx = append(f.idx, r)
		copy(f.xb.Row(i), f.pub.Row(r))
	}
	codes, err := f.encode(f.idx)
	if err != nil {
		return nil, err
	}
	// The critic: the pilot's codes are real, e fake.
	f.eps = f.eps[:0]
	for range B {
		f.eps = append(f.eps, f.rng.Float32())
	}
	f.wass, f.gp = f.critic.step(codes, e, f.eps)
	// The autoencoder on the public batch (the pilot's output buffer
	// is its own: the critic read it and did not change it).
	out := f.dec.forward(codes)
	f.recon.Resize(B, m)
	scale := 2 / float32(B*m)
	for i, v := range out.Data {
		f.recon.Data[i] = scale * (v - f.xb.Data[i])
	}
	dCodes := f.dec.backward(&f.recon)
	if f.net != nil {
		if _, err := f.net.Backward(dCodes); err != nil {
			return nil, fmt.Errorf("feature: FSHA pilot: %w", err)
		}
		if err := f.net.Step(); err != nil {
			return nil, fmt.Errorf("feature: FSHA pilot: %w", err)
		}
	} else {
		f.pilot.backward(dCodes)
	}
	f.aeOpt.Step(f.aeParams)
	if err := tensor.CheckFinite("feature: FSHA gradient", &f.grad); err != nil {
		return nil, err
	}
	return &f.grad, nil
}

// encode returns the pilot's codes of the given public rows (valid until
// the next call).
func (f *FSHA) encode(rows []int) (*tensor.Matrix, error) {
	if f.net == nil {
		f.xe.Resize(len(rows), f.pub.Cols)
		for i, r := range rows {
			copy(f.xe.Row(i), f.pub.Row(r))
		}
		return f.pilot.forward(&f.xe), nil
	}
	f.pubX.Gather(rows, &f.batch)
	codes, err := f.net.Forward(&f.batch)
	if err != nil {
		return nil, fmt.Errorf("feature: FSHA pilot: %w", err)
	}
	if codes.Rows != len(rows) || codes.Cols != f.d {
		return nil, fmt.Errorf("feature: FSHA pilot gave %d×%d codes for %d rows of a %d-wide cut", codes.Rows, codes.Cols, len(rows), f.d)
	}
	return codes, nil
}

// Pilot is a network that can serve as FSHA's pilot encoder f̃: the
// passive party's bottom architecture with its own weights and
// optimiser (model.Bottom has these methods).
type Pilot interface {
	Forward(in *data.Batch) (*tensor.Matrix, error)
	Backward(gCut *tensor.Matrix) ([]*tensor.Matrix, error)
	Step() error
}

// SetPilot makes p FSHA's pilot encoder in place of its one-hidden-layer
// network, before its first step. [Pasquini21]'s pilot is a
// convolutional network with the client's output shape, so that the
// feature space it defines is one the client's network can reach (a
// convolutional bottom's outputs are local; a dense pilot's codes are
// not); a network of the client's architecture (which the attacker
// knows) with weights of its own is one such. p reads batches of the
// public rows as the passive's bottom reads its own.
func (f *FSHA) SetPilot(p Pilot) error {
	if f.started {
		return errors.New("feature: FSHA's pilot is set before its first step")
	}
	f.net = p
	return nil
}

// Critic returns the critic's Wasserstein estimate (mean score of the
// pilot's codes minus that of the passive's embeddings) and its gradient
// penalty at the last step.
func (f *FSHA) Critic() (wasserstein, penalty float64) { return f.wass, f.gp }

func fill(s []float32, n int, v float32) []float32 {
	s = slices.Grow(s[:0], n)[:n]
	for i := range s {
		s[i] = v
	}
	return s
}

// Reconstruct decodes in's evaluated embeddings with the decoder of the
// moment; without embeddings (the own-column baseline) it guesses the
// prior.
func (f *FSHA) Reconstruct(in *Input) (*Guess, error) {
	if f.image {
		return nil, errors.New("feature: FSHA on images is scored by its ImageEvaluator, not as a table attack")
	}
	rows, m := evalRows(in), f.pub.Cols
	pred := make([]float64, rows*m)
	if in.EvalEmbed == nil || !f.started {
		for r := range rows {
			copy(pred[r*m:(r+1)*m], f.mean)
		}
		return decode(pred, rows, m, f.numDense, f.classes), nil
	}
	if in.EvalEmbed.Cols != f.d {
		return nil, fmt.Errorf("feature: FSHA built for a %d-wide cut, given %d-wide embeddings", f.d, in.EvalEmbed.Cols)
	}
	out := f.dec.forward(in.EvalEmbed)
	if err := tensor.CheckFinite("feature: FSHA decoder output", out); err != nil {
		return nil, err
	}
	for r := range rows {
		for j := range m {
			pred[r*m+j] = float64(out.Data[r*m+j])*f.sd[j] + f.mean[j]
		}
	}
	g := decode(pred, rows, m, f.numDense, f.classes)
	clipToRange(g.Dense, f.pubDense, f.numDense)
	return g, nil
}

// mlp2 is Dense → ReLU → Dense (→ ReLU when outReLU).
type mlp2 struct {
	l1, l2  *nn.Dense
	r1, r2  *nn.ReLU
	params  []*nn.Param
	outReLU bool
}

func newMLP2(in, hidden, out int, outReLU bool, rng *rand.Rand) *mlp2 {
	init := nn.GlorotUniform
	if outReLU {
		init = nn.HeNormal
	}
	m := &mlp2{l1: nn.NewDense(in, hidden, nn.HeNormal, rng), r1: &nn.ReLU{}, l2: nn.NewDense(hidden, out, init, rng), outReLU: outReLU}
	if outReLU {
		m.r2 = &nn.ReLU{}
	}
	m.params = append(slices.Clone(m.l1.Params()), m.l2.Params()...)
	return m
}

func (m *mlp2) forward(x *tensor.Matrix) *tensor.Matrix {
	y := m.l2.Forward(m.r1.Forward(m.l1.Forward(x)))
	if m.outReLU {
		y = m.r2.Forward(y)
	}
	return y
}

// backward sets the parameter gradients for dy at the last forward and
// returns ∂/∂x.
func (m *mlp2) backward(dy *tensor.Matrix) *tensor.Matrix {
	if m.outReLU {
		dy = m.r2.Backward(dy)
	}
	return m.l1.Backward(m.r1.Backward(m.l2.Backward(dy)))
}
