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

// PCG streams of MID's draws (initial weights, then the bottleneck's noise).
const (
	midInitStream  = 0x6d69642d696e6974 // "mid-init"
	midNoiseStream = 0x6d69642d6e6f6973 // "mid-nois"
	midStateTag    = "mid/v1"
)

func init() {
	registerBothSides("mid",
		"MID: a variational information bottleneck on the passive embedding at the active party's input, KL weight λ",
		"MID on the passive side: the same bottleneck at the passive party's output, its KL weight λ computed and differentiated by the passive party",
		[2]string{"in the active party's loss", "added by the passive party to the gradient it receives"},
		[2]uint32{0x2ca02c, 0x1b5e20}, midParams,
		newMIDFrom)
}

// midParams are the parameters of a MID layer whose keys start with
// prefix and whose symbols end with mark; where says where its KL term
// goes.
func midParams(prefix, mark, where string) []Param {
	what := "MID"
	if mark != "" {
		what = "MID on the passive side"
	}
	return []Param{
		{Key: prefix + "lambda", Symbol: "λ" + mark, Help: what + ": weight λ of the bottleneck's KL divergence to N(0, I), " + where, Min: 0, Max: math.Inf(1)},
		{Key: prefix + "bottleneck", Symbol: "k" + mark, Int: true, Help: what + ": width k of the bottleneck (default: the cut embedding's width)", Min: 1, Max: 1 << 16},
	}
}

// newMIDFrom builds the MID layer whose parameters' keys start with prefix.
func newMIDFrom(p Params, prefix string, o InputOptions) (*MID, error) {
	k := o.CutDim
	if p.Has(prefix + "bottleneck") {
		k = int(p.Get(prefix + "bottleneck"))
	}
	return NewMID(o.CutDim, k, p.Get(prefix+"lambda"), o.LR, o.Seed)
}

// InputOptions are what an input-layer defence needs of the run.
type InputOptions struct {
	CutDim int     // width d of the cut embedding
	LR     float32 // the active party's learning rate (Adam)
	Seed   uint64  // the run's seed
	// Secret is a party-local secret mixed into the draws the other party
	// must not be able to repeat (FedPass's passports); 0 in the
	// in-process simulation, where one process plays both parties.
	Secret uint64
	// DenseFeatures is the number of dense feature columns of the
	// passive party's input (a layer at the passive's output that
	// reconstructs them: ResSFL); 0 where unknown (the active's side).
	DenseFeatures int
}

// InputLayer is an add-on defence that the active party's top model
// applies to the cut embedding before its own layers (MID): a trained
// layer from B×d to B×d with a regulariser in the loss. Its parameters are
// part of the top model (saved and loaded with it), and it runs at
// evaluation and inference too.
type InputLayer interface {
	Name() string
	// Forward maps the embedding e to the top model's input; training
	// selects the training behaviour (MID samples its bottleneck; at
	// evaluation it takes the mean).
	Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error)
	// Backward takes ∂L/∂(Forward's output) of the last training Forward,
	// adds the regulariser's gradient, sets the parameter gradients and
	// returns ∂L/∂e. The regulariser's weight includes the 1/B of a mean.
	Backward(g *tensor.Matrix) (*tensor.Matrix, error)
	// RegLoss is the regulariser's value on the last training Forward
	// (λ times the batch's mean KL for MID).
	RegLoss() float64
	Step() error
	Save(w io.Writer) error
	Load(r io.Reader) error
}

// MID is the mutual-information defence of Zou et al. (arXiv 2301.01142)
// at the active party: a variational information bottleneck between the
// passive party's embedding e and the active party's top model,
//
//	h = ReLU(e·W₁ + b₁),  [μ, v] = h·W₂ + b₂,  z = μ + exp(v/2)·ξ,  ξ ~ N(0, I_k),
//	ê = ReLU(z·W₃ + b₃)·W₄ + b₄,
//
// with hidden width max(d, k), trained with the top model on the loss
// BCE + λ·(1/B)·Σ_i KL(N(μ_i, diag e^{v_i}) ‖ N(0, I_k)), where
//
//	KL_i = ½·Σ_j (μ_ij² + e^{v_ij} − v_ij − 1).
//
// The gradient the passive party receives is ∂L/∂e through the bottleneck:
// as λ grows the posterior is pushed to the prior, and what the gradient
// carries about the label shrinks with what z carries about e. At
// evaluation and inference z = μ (no noise). v is the log-variance (the
// paper and VFLAIR parametrise the standard deviation by a softplus; the
// KL is the same divergence either way).
type MID struct {
	lambda float64
	d, k   int
	layers [4]*nn.Dense
	relu1  nn.ReLU
	relu3  nn.ReLU
	params []*nn.Param
	opt    *nn.Adam
	pcg    *rand.PCG
	rng    *rand.Rand

	mu, logv, eps, z, dOut tensor.Matrix
	dOutAud                tensor.Matrix
	reg                    float64
	trained                bool // the last Forward was a training one
	pending                bool // a Backward awaits its Step
}

// NewMID returns a MID layer for embeddings of width d with a bottleneck
// of width k and KL weight λ ≥ 0, trained by Adam at learning rate lr;
// seed keys its initial weights and its noise.
func NewMID(d, k int, lambda float64, lr float32, seed uint64) (*MID, error) {
	switch {
	case d < 1 || k < 1:
		return nil, fmt.Errorf("MID: embedding width %d and bottleneck width %d must be positive", d, k)
	case !(lambda >= 0) || math.IsInf(lambda, 0):
		return nil, configkey.Keyed(fmt.Errorf("MID: λ = %v, want a finite value ≥ 0 (key mid_lambda)", lambda), "mid_lambda")
	case !(lr > 0):
		return nil, fmt.Errorf("MID: learning rate %v, want > 0", lr)
	}
	h := max(d, k)
	init := rand.New(rand.NewPCG(seed, midInitStream))
	m := &MID{lambda: lambda, d: d, k: k, opt: nn.NewAdam(lr)}
	m.layers = [4]*nn.Dense{
		nn.NewDense(d, h, nn.HeNormal, init),
		nn.NewDense(h, 2*k, nn.GlorotUniform, init),
		nn.NewDense(k, h, nn.HeNormal, init),
		nn.NewDense(h, d, nn.GlorotUniform, init),
	}
	for _, l := range m.layers {
		m.params = append(m.params, l.Params()...)
	}
	m.opt.Init(m.params)
	m.pcg = rand.NewPCG(seed, midNoiseStream)
	m.rng = rand.New(m.pcg)
	return m, nil
}

// Name returns "mid".
func (*MID) Name() string { return "mid" }

// Forward implements InputLayer.
func (m *MID) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if e == nil || e.Cols != m.d {
		return nil, fmt.Errorf("MID: embedding of %d columns, the bottleneck was built for %d", colsOf(e), m.d)
	}
	var noise *tensor.Matrix
	if training {
		m.eps.Resize(e.Rows, m.k)
		for i := range m.eps.Data {
			m.eps.Data[i] = float32(m.rng.NormFloat64())
		}
		noise = &m.eps
	}
	return m.forward(e, noise), nil
}

func colsOf(m *tensor.Matrix) int {
	if m == nil {
		return 0
	}
	return m.Cols
}

// forward runs the layer with the given noise ξ (nil: z = μ).
func (m *MID) forward(e, noise *tensor.Matrix) *tensor.Matrix {
	o := m.layers[1].Forward(m.relu1.Forward(m.layers[0].Forward(e)))
	n, k := e.Rows, m.k
	m.mu.Resize(n, k)
	m.logv.Resize(n, k)
	m.z.Resize(n, k)
	var kl float64
	for i := range n {
		row := o.Row(i)
		mu, lv, z := m.mu.Row(i), m.logv.Row(i), m.z.Row(i)
		copy(mu, row[:k])
		copy(lv, row[k:])
		for j := range k {
			v := float64(lv[j])
			kl += 0.5 * (float64(mu[j])*float64(mu[j]) + math.Exp(v) - v - 1)
			z[j] = mu[j]
			if noise != nil {
				z[j] = float32(float64(mu[j]) + math.Exp(v/2)*float64(noise.At(i, j)))
			}
		}
	}
	m.trained = noise != nil
	m.reg = 0
	if n > 0 {
		m.reg = m.lambda * kl / float64(n)
	}
	return m.layers[3].Forward(m.relu3.Forward(m.layers[2].Forward(&m.z)))
}

// RegLoss implements InputLayer: λ·(1/B)·Σ_i KL_i of the last Forward.
func (m *MID) RegLoss() float64 { return m.reg }

// Backward implements InputLayer.
func (m *MID) Backward(g *tensor.Matrix) (*tensor.Matrix, error) {
	if err := m.checkGrad(g); err != nil {
		return nil, err
	}
	dz := m.layers[2].Backward(m.relu3.Backward(m.layers[3].Backward(g)))
	m.dOut.Resize(m.z.Rows, 2*m.k)
	m.latentGrad(dz, &m.dOut)
	de := m.layers[0].Backward(m.relu1.Backward(m.layers[1].Backward(&m.dOut)))
	m.pending = true
	return de, nil
}

func (m *MID) checkGrad(g *tensor.Matrix) error {
	if !m.trained {
		return errors.New("MID: Backward without a training Forward")
	}
	if g == nil || g.Rows != m.z.Rows || g.Cols != m.d {
		return fmt.Errorf("MID: gradient of %d×%d for an output of %d×%d", rowsOf(g), colsOf(g), m.z.Rows, m.d)
	}
	return nil
}

// latentGrad writes ∂L/∂[μ, v] into out from ∂L/∂z, with the KL term's
// gradient.
func (m *MID) latentGrad(dz, out *tensor.Matrix) {
	n, k := m.z.Rows, m.k
	w := 0.0
	if n > 0 {
		w = m.lambda / float64(n)
	}
	for i := range n {
		mu, lv, dzr, o := m.mu.Row(i), m.logv.Row(i), dz.Row(i), out.Row(i)
		for j := range k {
			v := float64(lv[j])
			// z = μ + e^{v/2}ξ: ∂z/∂μ = 1, ∂z/∂v = ½e^{v/2}ξ;
			// ∂KL/∂μ = μ, ∂KL/∂v = ½(e^v − 1).
			o[j] = float32(float64(dzr[j]) + w*float64(mu[j]))
			o[k+j] = float32(float64(dzr[j])*0.5*math.Exp(v/2)*float64(m.eps.At(i, j)) + w*0.5*(math.Exp(v)-1))
		}
	}
}

// Backprop implements PassiveOutput: Backward's ∂L/∂e for g, parameter
// gradients untouched.
func (m *MID) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) {
	if err := m.checkGrad(g); err != nil {
		return nil, err
	}
	dz := m.layers[2].InputGrad(m.relu3.InputGrad(m.layers[3].InputGrad(g)))
	m.dOutAud.Resize(m.z.Rows, 2*m.k)
	m.latentGrad(dz, &m.dOutAud)
	return m.layers[0].InputGrad(m.relu1.InputGrad(m.layers[1].InputGrad(&m.dOutAud))), nil
}

func rowsOf(m *tensor.Matrix) int {
	if m == nil {
		return 0
	}
	return m.Rows
}

// Step implements InputLayer: one Adam update of the bottleneck.
func (m *MID) Step() error {
	return adamStep("MID", &m.pending, m.params, m.opt)
}

// Save implements InputLayer: weights, Adam moments and step count, and
// the noise stream, so that a resumed run draws the same noise.
func (m *MID) Save(w io.Writer) error {
	rs, err := m.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	sw := &stateWriter{}
	sw.str(midStateTag)
	sw.u32(m.d)
	sw.u32(m.k)
	sw.str(string(rs))
	writeParams(sw, m.params, m.opt)
	_, err = w.Write(sw.b)
	return err
}

// Load implements InputLayer: it restores what Save wrote into a MID of
// the same shape.
func (m *MID) Load(r io.Reader) error {
	sr, err := readState(r, midStateTag, "mid")
	if err != nil {
		return err
	}
	if d, k := sr.u32(), sr.u32(); sr.err == nil && (d != m.d || k != m.k) {
		sr.err = fmt.Errorf("a bottleneck of %d→%d, this one is %d→%d", d, k, m.d, m.k)
	}
	rs := sr.str()
	apply := readParams(sr, m.params, m.opt)
	if err := sr.done(); err != nil {
		return err
	}
	if err := m.pcg.UnmarshalBinary([]byte(rs)); err != nil {
		return fmt.Errorf("protect: mid state: noise stream: %w", err)
	}
	apply()
	m.pending, m.trained = false, false
	return nil
}
