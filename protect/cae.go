package protect

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// Training of the confusional autoencoder (the reference setting of Zou
// et al.'s code for few classes): soft labels sharpened at temperature
// caeTemp, caeEpochs passes over caeSamples of them in batches of
// caeBatch, Adam at caeLR, hidden width caeHidden.
const (
	caeStream  = 0x636165 // "cae"
	caeSamples = 8192
	caeBatch   = 128
	caeEpochs  = 20
	caeLR      = 5e-4
	caeTemp    = 0.025
	caeHidden  = 14
	caeDecodeW = 10 // weight of the reconstruction term
)

func init() {
	Register(Spec{Name: "cae", Color: 0x8c564b, Role: AddOn, Help: "confusional autoencoder: the loss uses soft fake labels, decoded at evaluation and inference (with --protect dsgd: DCAE)",
		Params: []Param{
			{Key: "cae_lambda", Symbol: "λ", Help: "CAE: weight λ of the fake labels' entropy in the autoencoder's loss (confusion)", Min: 0, Max: math.Inf(1)},
		},
		NewCodec: func(p Params, seed uint64) (LabelCodec, error) { return NewCAE(p.Get("cae_lambda"), seed) }})
}

// LabelCodec is an add-on defence that trains the active party's model on
// encoded labels and decodes its predictions (CAE): Encode gives the
// soft target in [0, 1] the loss uses for a label, Decode maps a predicted
// probability back to a probability of the true positive class.
type LabelCodec interface {
	Name() string
	Encode(y uint8) float32
	Decode(p float64) float64
}

// CAE is the confusional autoencoder of Zou et al. ("Defending batch-level
// label inference and replacement attacks in vertical federated
// learning", IEEE TBD 2022), for two classes. Before training, the active
// party trains an encoder E and a decoder D, each Dense(2→14)–ReLU–
// Dense(14→2)–softmax, on soft labels y (random two-class distributions
// sharpened at temperature 0.025, i.e. nearly one-hot) with the loss
//
//	10·CE(D(E(y)), y) − λ·H(E(y)) − CE(E(y), y),
//
// so that the fake label E(y) is far from y (−CE) and uncertain (−λ·H),
// while D still recovers y. Training then uses the soft fake label
// ỹ = E(onehot(y))₁ as the target of the binary cross-entropy, so the
// gradients the passive party receives are those of the fake labels; the
// predicted probability p is decoded as D((1−p, p))₁ at evaluation and
// inference. With a gradient discretisation (protection dsgd) this is the
// paper's DCAE.
//
// The training is deterministic for a seed (the run's): both parties'
// processes and a resumed run rebuild the same autoencoder, so it is not
// checkpointed.
type CAE struct {
	Lambda   float64
	enc, dec [2]*nn.Dense
	relu     [2]nn.ReLU
	// encoded are the soft targets of labels 0 and 1.
	encoded [2]float32
	x, dy   tensor.Matrix
}

// NewCAE trains a confusional autoencoder with entropy weight λ ≥ 0 from
// seed.
func NewCAE(lambda float64, seed uint64) (*CAE, error) {
	if !(lambda >= 0) || math.IsInf(lambda, 0) {
		return nil, configkey.Keyed(fmt.Errorf("CAE: λ = %v, want a finite value ≥ 0 (key cae_lambda)", lambda), "cae_lambda")
	}
	rng := rand.New(rand.NewPCG(seed, caeStream))
	c := &CAE{Lambda: lambda}
	c.enc = [2]*nn.Dense{nn.NewDense(2, caeHidden, nn.HeNormal, rng), nn.NewDense(caeHidden, 2, nn.GlorotUniform, rng)}
	c.dec = [2]*nn.Dense{nn.NewDense(2, caeHidden, nn.HeNormal, rng), nn.NewDense(caeHidden, 2, nn.GlorotUniform, rng)}
	c.train(rng)
	for y := range 2 {
		c.encoded[y] = float32(c.encode(float64(y)))
	}
	return c, nil
}

// Name returns "cae".
func (*CAE) Name() string { return "cae" }

// Encode returns the soft target of label y: E(onehot(y))₁.
func (c *CAE) Encode(y uint8) float32 { return c.encoded[min(y, 1)] }

// Decode returns D((1−p, p))₁.
func (c *CAE) Decode(p float64) float64 {
	out := c.apply(&c.dec, [][2]float64{{1 - p, p}})
	return out[0][1]
}

// encode returns E((1−y, y))₁.
func (c *CAE) encode(y float64) float64 { return c.apply(&c.enc, [][2]float64{{1 - y, y}})[0][1] }

// apply runs one half on rows and returns its softmax outputs.
func (c *CAE) apply(net *[2]*nn.Dense, rows [][2]float64) [][2]float64 {
	var x tensor.Matrix
	x.Resize(len(rows), 2)
	for i, r := range rows {
		x.Data[2*i], x.Data[2*i+1] = float32(r[0]), float32(r[1])
	}
	var relu nn.ReLU
	u := net[1].Forward(relu.Forward(net[0].Forward(&x)))
	out := make([][2]float64, len(rows))
	for i := range out {
		out[i] = softmax2(float64(u.Data[2*i]), float64(u.Data[2*i+1]))
	}
	return out
}

func softmax2(a, b float64) [2]float64 {
	m := math.Max(a, b)
	ea, eb := math.Exp(a-m), math.Exp(b-m)
	return [2]float64{ea / (ea + eb), eb / (ea + eb)}
}

// train fits the autoencoder on sharpened random soft labels.
func (c *CAE) train(rng *rand.Rand) {
	data := make([][2]float64, caeSamples)
	for i := range data {
		s := softmax2(rng.Float64(), rng.Float64())
		a, b := math.Pow(s[0], 1/caeTemp), math.Pow(s[1], 1/caeTemp)
		data[i] = [2]float64{a / (a + b), b / (a + b)}
	}
	var params []*nn.Param
	for _, l := range append(c.enc[:], c.dec[:]...) {
		params = append(params, l.Params()...)
	}
	opt := nn.NewAdam(caeLR)
	for range caeEpochs {
		for lo := 0; lo < len(data); lo += caeBatch {
			c.step(data[lo:min(lo+caeBatch, len(data))])
			opt.Step(params)
		}
	}
}

// step sets the parameter gradients of the batch's mean loss.
func (c *CAE) step(batch [][2]float64) {
	n := len(batch)
	c.x.Resize(n, 2)
	for i, y := range batch {
		c.x.Data[2*i], c.x.Data[2*i+1] = float32(y[0]), float32(y[1])
	}
	v := c.enc[1].Forward(c.relu[0].Forward(c.enc[0].Forward(&c.x)))
	fake := make([][2]float64, n)
	var f tensor.Matrix
	f.Resize(n, 2)
	for i := range n {
		fake[i] = softmax2(float64(v.Data[2*i]), float64(v.Data[2*i+1]))
		f.Data[2*i], f.Data[2*i+1] = float32(fake[i][0]), float32(fake[i][1])
	}
	u := c.dec[1].Forward(c.relu[1].Forward(c.dec[0].Forward(&f)))
	// ∂/∂u of 10·CE(softmax(u), y)/n is 10·(ŷ − y)/n.
	c.dy.Resize(n, 2)
	for i, y := range batch {
		yh := softmax2(float64(u.Data[2*i]), float64(u.Data[2*i+1]))
		for k := range 2 {
			c.dy.Data[2*i+k] = float32(caeDecodeW * (yh[k] - y[k]) / float64(n))
		}
	}
	gf := c.dec[0].Backward(c.relu[1].Backward(c.dec[1].Backward(&c.dy)))
	// On the fake label q: −λ·H(q) gives λ·(log q + 1), −CE(q, y) gives
	// y/q; then through the softmax: ∂/∂v_k = q_k·(g_k − Σ_j q_j·g_j).
	var gv tensor.Matrix
	gv.Resize(n, 2)
	for i, y := range batch {
		q := fake[i]
		var g [2]float64
		for k := range 2 {
			qk := math.Max(q[k], 1e-12)
			g[k] = float64(gf.Data[2*i+k]) + (c.Lambda*(math.Log(qk)+1)+y[k]/qk)/float64(n)
		}
		dot := q[0]*g[0] + q[1]*g[1]
		for k := range 2 {
			gv.Data[2*i+k] = float32(q[k] * (g[k] - dot))
		}
	}
	c.enc[0].Backward(c.relu[0].Backward(c.enc[1].Backward(&gv)))
}
