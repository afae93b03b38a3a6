package protect

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "emb_noise", Color: 0x6b8e23, Role: AddOn,
		Help: "Gaussian noise on the passive party's embedding: each row clipped to norm C, plus N(0, (σC)²) noise, in training and at every evaluation (a defence of the features; ε per example in summary.json)",
		Params: []Param{
			{Key: "emb_noise_sigma", Symbol: "σe", Help: "noise multiplier σ of the embedding noise: its standard deviation is σ·C",
				Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "emb_noise_clip", Symbol: "Ce", Help: "clipping norm C of each embedding row before the noise (default 1)",
				Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "emb_noise_delta", Symbol: "δe", Help: "δ of the (ε, δ) the accountant reports (default 1e-5)",
				Min: 0, MinOpen: true, Max: 1, MaxOpen: true},
		},
		NewPassiveOutput: func(p Params, o InputOptions) (PassiveOutput, error) {
			sigma, clip, _ := embNoiseParams(p)
			return NewEmbNoise(sigma, clip, o.Seed, o.Secret)
		},
		Account: func(p Params, releases int64) (map[string]float64, error) {
			sigma, _, delta := embNoiseParams(p)
			return gaussianReleases(sigma, delta, releases)
		},
		Bench: Params{"emb_noise_sigma": 0.5, "emb_noise_clip": 1}})
}

// embNoiseDefaultClip is C when emb_noise_clip is not set.
const embNoiseDefaultClip = 1

// embNoiseParams reads σ, C and δ with their defaults.
func embNoiseParams(p Params) (sigma, clip, delta float64) {
	sigma, clip, delta = p.Get("emb_noise_sigma"), embNoiseDefaultClip, gradDPDelta
	if p.Has("emb_noise_clip") {
		clip = p.Get("emb_noise_clip")
	}
	if p.Has("emb_noise_delta") {
		delta = p.Get("emb_noise_delta")
	}
	return sigma, clip, delta
}

// gaussianReleases is the accountant of a Gaussian mechanism with noise
// multiplier sigma on rows clipped to norm C, released at most releases
// times per example: each release is (α, 2α/σ²)-RDP (sensitivity 2C, noise
// σC), composed k times and converted at delta ([RDPToDP]).
func gaussianReleases(sigma, delta float64, releases int64) (map[string]float64, error) {
	if releases < 0 {
		return nil, errors.New("negative number of releases")
	}
	if releases == 0 {
		return map[string]float64{"eps": 0, "delta": 0, "releases": 0}, nil
	}
	k := float64(releases)
	eps, order := RDPToDP(func(alpha float64) float64 { return k * GaussianRDP(alpha, 2/sigma) }, delta)
	return map[string]float64{"eps": eps, "delta": delta, "releases": k, "order": order}, nil
}

// PCG stream of the embedding noise's training draws.
const embNoiseStream = 0x656d625f6e6f6973 // "emb_nois"

// EmbNoise is Gaussian noise on the passive party's cut embedding, the
// Gaussian mechanism applied to each example's embedding row (as in
// Titcombe et al., "Practical defences against model inversion attacks
// for split neural networks", 2021, and the DP embedding release of
// VFLAIR's feature defences): every row e_i is clipped to L2 norm C and
// sent as
//
//	ẽ_i = e_i·min(1, C/‖e_i‖) + σ·C·ξ_i,  ξ_i ~ N(0, I).
//
// # What is protected, and the accountant
//
// The neighbouring relation is one example's passive features changed.
// Row i of a message is the only row computed from example i's features,
// and after clipping it moves by at most 2C: the sensitivity is Δ = 2C and
// one release is (α, 2α/σ²)-Rényi DP (the same mechanism as grad_dp's, on
// the other secret). Training batches partition the training split every
// epoch, so a training example is released once per epoch; k releases
// compose to ε = min_α 2kα/σ² + log(1/δ)/(α − 1) (Mironov 2017), which
// summary.json reports. Not accounted for: the bottom model is trained on
// the clean features, and rows of other examples released later depend on
// example i's features through it (the same caveat as grad_dp's); and the
// evaluation and serving releases of validation, test and scored rows,
// which are not training examples (each is one more release of that row
// per evaluation in which its embedding changed, see below).
//
// # Evaluation and serving
//
// Every release is noised, so that the test AUC measures the model as it
// would be served and a feature attack sees what the active party would
// see. Outside training the noise of a row is drawn from a stream keyed by
// the run's seed, the passive party's secret and the row's clipped
// embedding (SHA-256 of its bits): asking for the same embedding again
// returns the same answer, so averaging repeated queries removes no noise,
// and evaluations draw nothing from the training stream (a feature attack
// at every evaluation leaves the training run unchanged).
//
// Backward passes ∂L/∂ẽ through the clipping's Jacobian: g for an
// unclipped row, (C/‖e‖)·(g − (ê·g)·ê) with ê = e/‖e‖ for a clipped one.
type EmbNoise struct {
	sigma, clip float64
	key         [16]byte // evaluation noise key: the seed and the secret

	pcg *rand.PCG // the training noise stream
	rng *rand.Rand

	evalPCG *rand.PCG // reseeded for every evaluation row
	evalRNG *rand.Rand

	e       tensor.Matrix // the last training Forward's input
	out     tensor.Matrix
	scale   []float32 // each row's min(1, C/‖e‖)
	trained bool
	grad    tensor.Matrix
	aud     tensor.Matrix
	rowBuf  []byte
}

// NewEmbNoise returns the embedding noise with multiplier sigma > 0 and
// clipping norm clip > 0, its draws keyed by the run's seed and the
// passive party's secret (which the active party, who knows the seed,
// must not know: with it, it could draw the same noise and subtract it).
func NewEmbNoise(sigma, clip float64, seed, secret uint64) (*EmbNoise, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("protect: embedding noise multiplier σ = %v, want a finite σ > 0", sigma)
	}
	if !(clip > 0) || math.IsInf(clip, 0) {
		return nil, fmt.Errorf("protect: embedding clipping norm C = %v, want a finite C > 0", clip)
	}
	n := &EmbNoise{sigma: sigma, clip: clip, pcg: rand.NewPCG(seed^passiveSeed, embNoiseStream^secret), evalPCG: rand.NewPCG(0, 0)}
	n.rng, n.evalRNG = rand.New(n.pcg), rand.New(n.evalPCG)
	binary.LittleEndian.PutUint64(n.key[:8], seed)
	binary.LittleEndian.PutUint64(n.key[8:], secret)
	return n, nil
}

// Name returns "emb_noise".
func (*EmbNoise) Name() string { return "emb_noise" }

// Forward returns the clipped, noised embedding; in training it keeps what
// Backward needs.
func (n *EmbNoise) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if e == nil || e.Rows == 0 || e.Cols == 0 {
		return nil, errors.New("protect: embedding noise given an empty embedding")
	}
	n.out.Resize(e.Rows, e.Cols)
	if cap(n.scale) < e.Rows {
		n.scale = make([]float32, e.Rows)
	}
	scale := n.scale[:e.Rows]
	sd := n.sigma * n.clip
	for i := range e.Rows {
		row, dst := e.Row(i), n.out.Row(i)
		scale[i] = clipScale(row, n.clip)
		for j, v := range row {
			dst[j] = v * scale[i]
		}
		rng := n.rng
		if !training {
			n.seedRow(dst)
			rng = n.evalRNG
		}
		for j := range dst {
			dst[j] += float32(sd * rng.NormFloat64())
		}
	}
	if training {
		n.e.Resize(e.Rows, e.Cols)
		copy(n.e.Data, e.Data)
		n.trained = true
	}
	return &n.out, nil
}

// clipScale is min(1, C/‖row‖).
func clipScale(row []float32, clip float64) float32 {
	var ss float64
	for _, v := range row {
		ss += float64(v) * float64(v)
	}
	if norm := math.Sqrt(ss); norm > clip {
		return float32(clip / norm)
	}
	return 1
}

// seedRow keys the evaluation stream by the seed, the secret and the
// clipped row's bits.
func (n *EmbNoise) seedRow(clipped []float32) {
	n.rowBuf = n.rowBuf[:0]
	n.rowBuf = append(n.rowBuf, n.key[:]...)
	for _, v := range clipped {
		n.rowBuf = binary.LittleEndian.AppendUint32(n.rowBuf, math.Float32bits(v))
	}
	h := sha256.Sum256(n.rowBuf)
	n.evalPCG.Seed(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16]))
}

// Backward returns ∂L/∂e for g = ∂L/∂ẽ at the last training Forward.
func (n *EmbNoise) Backward(g *tensor.Matrix) (*tensor.Matrix, error) { return n.backward(g, &n.grad) }

// Backprop is Backward into a separate buffer (the layer has no
// parameters).
func (n *EmbNoise) Backprop(g *tensor.Matrix) (*tensor.Matrix, error) { return n.backward(g, &n.aud) }

func (n *EmbNoise) backward(g, dst *tensor.Matrix) (*tensor.Matrix, error) {
	if !n.trained {
		return nil, errors.New("protect: embedding noise backward before a training forward")
	}
	if g.Rows != n.e.Rows || g.Cols != n.e.Cols {
		return nil, fmt.Errorf("protect: embedding noise backward of a %d×%d gradient after a %d×%d forward", g.Rows, g.Cols, n.e.Rows, n.e.Cols)
	}
	dst.Resize(g.Rows, g.Cols)
	for i := range g.Rows {
		gr, er, dr := g.Row(i), n.e.Row(i), dst.Row(i)
		s := n.scale[i]
		if s == 1 {
			copy(dr, gr)
			continue
		}
		// With ‖e‖ = C/s: (C/‖e‖)·(g − (ê·g)·ê) = s·g − s·c·e,
		// c = (e·g)/‖e‖² = s²·(e·g)/C².
		var eg float64
		for j, v := range er {
			eg += float64(v) * float64(gr[j])
		}
		c := float64(s) * float64(s) * eg / (n.clip * n.clip)
		for j, v := range gr {
			dr[j] = float32(float64(s)*float64(v) - float64(s)*c*float64(er[j]))
		}
	}
	return dst, nil
}

// RegLoss is 0: the noise adds no term to the loss.
func (*EmbNoise) RegLoss() float64 { return 0 }

// Step does nothing: the layer has no parameters.
func (*EmbNoise) Step() error { return nil }

// embNoiseStateTag versions the layer's saved state.
const embNoiseStateTag = "emb_noise/v1"

// Save writes the training noise stream, so that a resumed run draws the
// same noise.
func (n *EmbNoise) Save(w io.Writer) error {
	rs, err := n.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	sw := &stateWriter{}
	sw.str(embNoiseStateTag)
	sw.str(string(rs))
	_, err = w.Write(sw.b)
	return err
}

// Load restores what Save wrote.
func (n *EmbNoise) Load(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("protect: emb_noise state: %w", err)
	}
	sr := &stateReader{b: raw, what: "emb_noise"}
	sr.tag(embNoiseStateTag)
	rs := sr.str()
	if err := sr.done(); err != nil {
		return err
	}
	if err := n.pcg.UnmarshalBinary([]byte(rs)); err != nil {
		return fmt.Errorf("protect: emb_noise state: noise stream: %w", err)
	}
	n.trained = false
	return nil
}
