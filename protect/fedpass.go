package protect

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// PCG streams of FedPass's draws (initial weights, then the passports),
// the autoencoder's LeakyReLU slope (PyTorch's default, as FATE uses) and
// the state's version tag.
const (
	fedpassInitStream     = 0x66702d696e6974 // "fp-init"
	fedpassPassportStream = 0x66702d6b657973 // "fp-keys"
	fedpassLeak           = 0.01
	fedpassStateTag       = "fedpass/v1"
)

func init() {
	registerBothSides("fedpass",
		"FedPass: a passport layer as the first layer of the active party's top model (scale and bias from secret passports, means in U(−N, 0))",
		"FedPass on the passive side: a passport layer as the passive party's last layer, its passports kept by the passive party",
		[2]string{"in the active top", "in the passive bottom"},
		[2]uint32{0x393b79, 0x6b6ecf}, passportParams,
		newPassportFrom)
}

// passportParams are the parameters of a passport layer whose keys start
// with prefix and whose symbols end with mark; where names its place.
func passportParams(prefix, mark, where string) []Param {
	return []Param{
		{Key: prefix + "range", Symbol: "N" + mark, Help: "FedPass " + where + ": the passports' means are drawn from U(−N, 0)", Min: 0, MinOpen: true, Max: 1e6},
		{Key: prefix + "sigma", Symbol: "σ" + mark, Help: "FedPass " + where + ": standard deviation σ of each passport entry around its mean (default 1)", Min: 0, Max: 1e6},
	}
}

// newPassportFrom builds the passport layer whose parameters' keys start
// with prefix.
func newPassportFrom(p Params, prefix string, o InputOptions) (*Passport, error) {
	sigma := 1.0
	if p.Has(prefix + "sigma") {
		sigma = p.Get(prefix + "sigma")
	}
	return NewPassport(o.CutDim, p.Get(prefix+"range"), sigma, o.LR, o.Seed, o.Secret)
}

// Passport is the passport layer of FedPass (Gu et al., "FedPass:
// Privacy-Preserving Vertical Federated Deep Learning with Adaptive
// Obfuscation", arXiv 2301.12623): a d→d linear map whose scale and bias
// are functions of its own weights W applied to two secret passports
// s_γ, s_β ∈ ℝ^d,
//
//	out = γ ⊙ (x·W) + β,  γ = A(s_γ·W),  β = A(s_β·W),
//	A(u) = LeakyReLU(u·E)·D,
//
// with the autoencoder A (E: d×h, D: h×d, h = max(1, ⌊d/4⌋), no biases)
// shared by γ and β and trained with W. Each passport entry is drawn once
// from N(μ_k, σ²) with its own mean μ_k ~ U(−N, 0), keyed by the run's
// seed (and, on the passive side, a passive-only stream) mixed with the
// party's secret (netrun derives it from the party's TLS key). Passports are
// never trained; they are saved with the layer's state so that the
// checkpoint of a party holds its own. Averaging several passports, as
// the paper's code allows, equals one passport of their mean here (the
// map s ↦ s·W is linear), so each side draws one.
type Passport struct {
	d, h          int
	w, enc, dec   *tensor.Matrix // d×d, d×h, h×d
	dw, dEnc, dDc *tensor.Matrix
	params        []*nn.Param
	opt           *nn.Adam
	sg, sb        []float32 // the passports of γ and β

	// The last Forward: its input, x·W, and both branches of A.
	x            *tensor.Matrix
	a, y         tensor.Matrix
	gam, bet     branch
	gs, dx       tensor.Matrix
	gsAud, dxAud tensor.Matrix
	dGam, dBet   []float32
	trained      bool
	pending      bool
}

// branch is one evaluation of u = s·W, z = u·E, γ = LeakyReLU(z)·D.
type branch struct {
	u, z, out []float32
	du, dz    []float32 // Backward's scratch
}

// NewPassport returns a passport layer for embeddings of width d, its
// passports' means drawn from U(−n, 0) and their entries with standard
// deviation sigma around them, trained by Adam at learning rate lr; seed
// keys the initial weights, and seed mixed with the party's secret keys
// the passports (secret 0: the seed alone, as in the in-process
// simulation). With a secret the other party does not know, it cannot
// redraw the passports from the run's shared seed.
func NewPassport(d int, n, sigma float64, lr float32, seed, secret uint64) (*Passport, error) {
	switch {
	case d < 1:
		return nil, fmt.Errorf("FedPass: embedding width %d must be positive", d)
	case !(n > 0) || math.IsInf(n, 0):
		return nil, fmt.Errorf("FedPass: passport range N = %v, want a finite value > 0", n)
	case !(sigma >= 0) || math.IsInf(sigma, 0):
		return nil, fmt.Errorf("FedPass: passport σ = %v, want a finite value ≥ 0", sigma)
	case !(lr > 0):
		return nil, fmt.Errorf("FedPass: learning rate %v, want > 0", lr)
	}
	h := max(1, d/4)
	p := &Passport{d: d, h: h, opt: nn.NewAdam(lr),
		w: tensor.New(d, d), enc: tensor.New(d, h), dec: tensor.New(h, d),
		dw: tensor.New(d, d), dEnc: tensor.New(d, h), dDc: tensor.New(h, d),
		dGam: make([]float32, d), dBet: make([]float32, d)}
	init := rand.New(rand.NewPCG(seed, fedpassInitStream))
	for _, m := range []*tensor.Matrix{p.w, p.enc, p.dec} {
		a := math.Sqrt(6 / float64(m.Rows+m.Cols))
		for i := range m.Data {
			m.Data[i] = float32((2*init.Float64() - 1) * a)
		}
	}
	keys := rand.New(rand.NewPCG(seed^secret, fedpassPassportStream))
	p.sg, p.sb = drawPassport(keys, d, n, sigma), drawPassport(keys, d, n, sigma)
	for _, b := range []*branch{&p.gam, &p.bet} {
		*b = branch{u: make([]float32, d), z: make([]float32, h), out: make([]float32, d),
			du: make([]float32, d), dz: make([]float32, h)}
	}
	p.params = []*nn.Param{{Name: "fedpass.W", W: p.w, G: p.dw}, {Name: "fedpass.E", W: p.enc, G: p.dEnc}, {Name: "fedpass.D", W: p.dec, G: p.dDc}}
	p.opt.Init(p.params)
	return p, nil
}

// drawPassport draws d entries, entry k from N(μ_k, σ²) with μ_k ~ U(−n, 0).
func drawPassport(rng *rand.Rand, d int, n, sigma float64) []float32 {
	s := make([]float32, d)
	for k := range s {
		mu := -n * rng.Float64()
		s[k] = float32(mu + sigma*rng.NormFloat64())
	}
	return s
}

// Name returns "fedpass".
func (*Passport) Name() string { return "fedpass" }

// RegLoss implements InputLayer: FedPass adds no loss term.
func (*Passport) RegLoss() float64 { return 0 }

// eval computes the branch of passport s at the current weights.
func (p *Passport) eval(b *branch, s []float32) {
	d, h := p.d, p.h
	clear(b.u)
	for k := range d {
		row := p.w.Row(k)
		for j := range d {
			b.u[j] += s[k] * row[j]
		}
	}
	clear(b.z)
	for j := range d {
		row := p.enc.Row(j)
		for l := range h {
			b.z[l] += b.u[j] * row[l]
		}
	}
	clear(b.out)
	for l := range h {
		hl := leaky(b.z[l])
		row := p.dec.Row(l)
		for j := range d {
			b.out[j] += hl * row[j]
		}
	}
}

func leaky(z float32) float32 {
	if z > 0 {
		return z
	}
	return fedpassLeak * z
}

// Forward implements InputLayer and PassiveOutput: γ ⊙ (x·W) + β, the
// same in training and at evaluation.
func (p *Passport) Forward(x *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if x == nil || x.Cols != p.d {
		return nil, fmt.Errorf("FedPass: embedding of %d columns, the passport layer was built for %d", colsOf(x), p.d)
	}
	p.x = x
	tensor.MatMul(&p.a, x, false, p.w, false, 1, 0)
	p.eval(&p.gam, p.sg)
	p.eval(&p.bet, p.sb)
	p.y.Resize(x.Rows, p.d)
	g, bt := p.gam.out, p.bet.out
	for i := range x.Rows {
		a, y := p.a.Row(i), p.y.Row(i)
		for j := range y {
			y[j] = g[j]*a[j] + bt[j]
		}
	}
	p.trained = training
	return &p.y, nil
}

func (p *Passport) check(g *tensor.Matrix) error {
	if !p.trained {
		return errors.New("FedPass: Backward without a training Forward")
	}
	if g == nil || g.Rows != p.y.Rows || g.Cols != p.d {
		return fmt.Errorf("FedPass: gradient of %d×%d for an output of %d×%d", rowsOf(g), colsOf(g), p.y.Rows, p.d)
	}
	return nil
}

// scaled writes g ⊙ γ (row by row) into dst.
func (p *Passport) scaled(dst, g *tensor.Matrix) {
	dst.Resize(g.Rows, g.Cols)
	for i := range g.Rows {
		gr, o := g.Row(i), dst.Row(i)
		for j, v := range gr {
			o[j] = v * p.gam.out[j]
		}
	}
}

// Backward implements InputLayer and PassiveOutput: it sets the gradients
// of W (through x·W and through both passports' branches) and of the
// autoencoder, and returns ∂L/∂x = (g ⊙ γ)·Wᵀ.
func (p *Passport) Backward(g *tensor.Matrix) (*tensor.Matrix, error) {
	if err := p.check(g); err != nil {
		return nil, err
	}
	clear(p.dGam)
	clear(p.dBet)
	for i := range g.Rows {
		gr, a := g.Row(i), p.a.Row(i)
		for j, v := range gr {
			p.dGam[j] += v * a[j]
			p.dBet[j] += v
		}
	}
	p.scaled(&p.gs, g)
	tensor.MatMul(p.dw, p.x, true, &p.gs, false, 1, 0)
	clear(p.dEnc.Data)
	clear(p.dDc.Data)
	p.backBranch(&p.gam, p.sg, p.dGam)
	p.backBranch(&p.bet, p.sb, p.dBet)
	tensor.MatMul(&p.dx, &p.gs, false, p.w, true, 1, 0)
	p.pending = true
	return &p.dx, nil
}

// backBranch adds the gradients of D, E and W through one branch whose
// output received dOut.
func (p *Passport) backBranch(b *branch, s, dOut []float32) {
	d, h := p.d, p.h
	for l := range h {
		hl := leaky(b.z[l])
		row, drow := p.dec.Row(l), p.dDc.Row(l)
		var dh float32
		for j := range d {
			drow[j] += hl * dOut[j]
			dh += row[j] * dOut[j]
		}
		if b.z[l] <= 0 {
			dh *= fedpassLeak
		}
		b.dz[l] = dh
	}
	for j := range d {
		row, drow := p.enc.Row(j), p.dEnc.Row(j)
		var du float32
		for l := range h {
			drow[l] += b.u[j] * b.dz[l]
			du += row[l] * b.dz[l]
		}
		b.du[j] = du
	}
	for k := range d {
		drow := p.dw.Row(k)
		for j := range d {
			drow[j] += s[k] * b.du[j]
		}
	}
}

// Backprop implements PassiveOutput: ∂L/∂x for g, parameter gradients
// untouched.
func (p *Passport) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) {
	if err := p.check(g); err != nil {
		return nil, err
	}
	p.scaled(&p.gsAud, g)
	tensor.MatMul(&p.dxAud, &p.gsAud, false, p.w, true, 1, 0)
	return &p.dxAud, nil
}

// Step implements InputLayer: one Adam update of W and the autoencoder.
func (p *Passport) Step() error {
	return adamStep("FedPass", &p.pending, p.params, p.opt)
}

// Save implements InputLayer: the shape, both passports, the weights,
// Adam's moments and step count.
func (p *Passport) Save(w io.Writer) error {
	sw := &stateWriter{}
	sw.str(fedpassStateTag)
	sw.u32(p.d)
	sw.u32(p.h)
	writeFloats(sw, p.sg)
	writeFloats(sw, p.sb)
	writeParams(sw, p.params, p.opt)
	_, err := w.Write(sw.b)
	return err
}

// Load implements InputLayer: it restores what Save wrote into a passport
// layer of the same width.
func (p *Passport) Load(r io.Reader) error {
	sr, err := readState(r, fedpassStateTag, "fedpass")
	if err != nil {
		return err
	}
	if d, h := sr.u32(), sr.u32(); sr.err == nil && (d != p.d || h != p.h) {
		sr.err = fmt.Errorf("a passport layer of width %d (autoencoder %d), this one is %d (%d)", d, h, p.d, p.h)
	}
	sg := readFloats(sr, "passport γ", p.d)
	sb := readFloats(sr, "passport β", p.d)
	apply := readParams(sr, p.params, p.opt)
	if err := sr.done(); err != nil {
		return err
	}
	copy(p.sg, sg)
	copy(p.sb, sb)
	apply()
	p.pending, p.trained = false, false
	return nil
}
