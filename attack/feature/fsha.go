package feature

import (
	"errors"
	"fmt"
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
// attacks, coded as the decoders' targets and standardised) and trains,
// at every training step, three networks of its own:
//
//   - a pilot encoder f̃ from features to the cut embedding's space (a
//     final ReLU when the passive's embeddings are non-negative, as a
//     ReLU cut layer's are) and a decoder f̃⁻¹ back, as an autoencoder
//     on a batch of public rows: ‖f̃⁻¹(f̃(x_pub)) − x_pub‖²;
//   - a discriminator D of embeddings, trained to tell the pilot's
//     f̃(x_pub) (label 1) from the passive's received f(x) (label 0);
//
// and answers the passive's batch with the gradient of the generator loss
// −mean_i D(f(x_i)) with respect to the embedding:
// the passive, descending it, moves its bottom's output distribution onto
// the pilot's latent space, where f̃⁻¹ decodes it. The reconstruction of a
// row is f̃⁻¹(e). [Pasquini21] trains D as a Wasserstein critic with a
// gradient penalty; the penalty needs second derivatives, which nn does
// not have, so D here is the original Wasserstein GAN's critic (loss
// mean D(fake) − mean D(real), weights clipped to ±Clip after each step).
// Every network has one hidden layer of Hidden ReLU units; all are
// trained by Adam (the autoencoder at LR, the critic at DiscLR).
//
// An FSHA is one run's attacker: Gradient is its training step, and as an
// [Attack] ("fsha") its Reconstruct decodes the evaluated rows'
// embeddings with the decoder of the moment (the auxiliary rows it is
// given are ignored: it was built with its public rows).
type FSHA struct {
	Hidden     int
	LR, DiscLR float32
	Clip       float32

	pub      *tensor.Matrix // public rows, coded and standardised
	pubDense []float32      // their raw dense columns (clipping guesses)
	numDense int
	classes  [][]int32
	mean, sd []float64

	rng             *rand.Rand
	d               int
	started         bool
	pilot, dec, dis *mlp2
	aeParams        []*nn.Param
	aeOpt, disOpt   *nn.Adam

	xb, recon, joint, grad tensor.Matrix
	dLogits                []float32
}

// NewFSHA returns the attacker of a run whose cut embedding is d wide,
// with pub the passive features of its public rows (at least 2), seeded
// by seed.
func NewFSHA(pub *data.Features, d int, seed uint64) (*FSHA, error) {
	if pub == nil || pub.Rows < 2 {
		return nil, errors.New("feature: FSHA needs at least 2 public rows")
	}
	if pub.Image != nil {
		return nil, errors.New("feature: FSHA reconstructs table columns; the data are images")
	}
	if d < 1 {
		return nil, fmt.Errorf("feature: FSHA for a cut of width %d", d)
	}
	classes := levelsOf(pub, TargetClasses)
	y, m := targets(pub, classes)
	if m == 0 {
		return nil, errors.New("feature: FSHA: the passive party has no column")
	}
	n := pub.Rows
	mean, sd := colMeans(y, n, m), colSDs(y, n, m)
	return &FSHA{Hidden: 128, LR: 1e-3, DiscLR: 1e-4, Clip: 0.01,
		pub: tensor.FromSlice(n, m, standardise(y, mean, sd, n, m)), pubDense: slices.Clone(pub.Dense),
		numDense: pub.NumDense, classes: classes, mean: mean, sd: sd, d: d,
		rng: rand.New(rand.NewPCG(seed, streamFSHA))}, nil
}

// Name returns "fsha".
func (*FSHA) Name() string { return "fsha" }

// start builds the networks at the first batch, the pilot's output like
// the embeddings received (non-negative: a final ReLU).
func (f *FSHA) start(e *tensor.Matrix) {
	m := f.pub.Cols
	nonNeg := !slices.ContainsFunc(e.Data, func(v float32) bool { return v < 0 })
	f.pilot = newMLP2(m, f.Hidden, f.d, nonNeg, f.rng)
	f.dec = newMLP2(f.d, f.Hidden, m, false, f.rng)
	f.dis = newMLP2(f.d, f.Hidden, 1, false, f.rng)
	f.aeParams = append(slices.Clone(f.pilot.params), f.dec.params...)
	f.aeOpt, f.disOpt = nn.NewAdam(f.LR), nn.NewAdam(f.DiscLR)
	f.started = true
}

// Gradient is one hijacking step on the passive party's batch embedding e
// (B×d): it returns the gradient to send (∂ of the generator loss with
// respect to e, valid until the next call), then trains the
// discriminator on e against the pilot's codes of B public rows and the
// autoencoder on those rows.
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
	f.dis.forward(e)
	g := f.dis.inputGrad(tensor.FromSlice(B, 1, f.dLogits))
	f.grad.Resize(B, f.d)
	copy(f.grad.Data, g.Data)

	// A batch of public rows and the pilot's codes of them.
	f.xb.Resize(B, m)
	for i := range B {
		copy(f.xb.Row(i), f.pub.Row(f.rng.IntN(f.pub.Rows)))
	}
	codes := f.pilot.forward(&f.xb)
	// The discriminator: the pilot's codes are real (1), e fake (0).
	f.joint.Resize(2*B, f.d)
	copy(f.joint.Data, codes.Data)
	copy(f.joint.Data[B*f.d:], e.Data)
	// The critic's loss mean D(fake) − mean D(real), its weights then
	// clipped to [−Clip, Clip] (the Wasserstein GAN's Lipschitz bound).
	f.dis.forward(&f.joint)
	f.dLogits = fill(f.dLogits, 2*B, 1/float32(B))
	for i := range B {
		f.dLogits[i] = -1 / float32(B)
	}
	f.dis.backward(tensor.FromSlice(2*B, 1, f.dLogits))
	f.disOpt.Step(f.dis.params)
	for _, p := range f.dis.params {
		for i, v := range p.W.Data {
			p.W.Data[i] = min(max(v, -f.Clip), f.Clip)
		}
	}
	// The autoencoder on the public batch (codes recomputed: the
	// discriminator's pass reused the pilot's buffers only through the
	// copy above).
	codes = f.pilot.forward(&f.xb)
	out := f.dec.forward(codes)
	f.recon.Resize(B, m)
	scale := 2 / float32(B*m)
	for i, v := range out.Data {
		f.recon.Data[i] = scale * (v - f.xb.Data[i])
	}
	f.pilot.backward(f.dec.backward(&f.recon))
	f.aeOpt.Step(f.aeParams)
	if err := tensor.CheckFinite("feature: FSHA gradient", &f.grad); err != nil {
		return nil, err
	}
	return &f.grad, nil
}

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

// inputGrad returns ∂/∂x for dy at the last forward, leaving the
// parameter gradients alone.
func (m *mlp2) inputGrad(dy *tensor.Matrix) *tensor.Matrix {
	if m.outReLU {
		dy = m.r2.InputGrad(dy)
	}
	return m.l1.InputGrad(m.r1.InputGrad(m.l2.InputGrad(dy)))
}
