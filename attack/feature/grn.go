package feature

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// streamGRN is the PCG stream of the generator's initialisation and its
// noise inputs.
const streamGRN = 0x67726e

func init() {
	Register("grn", func() Attack {
		return &GRN{Hidden: 64, Noise: 4, Steps: 2000, Batch: 256, LR: 1e-2, Prior: 0.01, Surrogate: 64, FitSteps: 400}
	})
}

// Joint is the active party's top model as the GRN attacker holds it
// (white-box): model.Top has these methods. Forward gives the logits of
// cut embeddings e with the active party's own columns own (nil for a top
// that reads none); Backward returns ∂/∂e of the loss whose gradient at
// the logits it is given.
type Joint interface {
	Forward(e *tensor.Matrix, own *data.Batch) ([]float32, error)
	Backward(dLogits []float32) (*tensor.Matrix, error)
}

// GRN is the generative regression network of Luo et al. (ICDE 2021,
// "Feature inference attack on model predictions in vertical federated
// learning"): at serving time the active party holds the joint model's
// output v_i for every row it scores and its own columns a_i, and trains a
// generator G of the passive party's features,
//
//	x̂_i = G(a_i, v_i, r_i),  r_i ~ N(0, I) fixed per row,
//
// so that the joint model on (a_i, x̂_i) reproduces the outputs it saw:
//
//	min_G (1/n)·Σ_i (σ(h(f̂(x̂_i), a_i)) − σ(v_i))² + λ·‖x̂_i‖²/m,
//
// h the active's trained top (white-box: it is the active's own model),
// f̂ the passive's bottom, which the active does not hold: as in
// [Inversion] it fits a surrogate from the auxiliary rows' features to
// the embeddings it saw for them in training, and the generator's
// features pass through it. It never reads the evaluated rows'
// embeddings (the attack's threat model: predictions only), only
// Input.EvalScores. Features are coded as the decoders' targets (dense
// columns, one indicator per frequent class of a categorical column),
// standardised by the auxiliary rows; λ = Prior pulls a guess to the
// auxiliary mean where the outputs do not decide. G has one hidden layer
// of Hidden ReLU units over the coded own columns, the output it must
// explain (standardised) and Noise noise inputs, trained by Adam over
// Steps mini-batches of Batch rows at rate LR. The paper's generator
// reads (a_i, r_i) only and reaches a row's guess by fitting that row's
// fixed noise; handing it v_i too is the amortised form of the same
// objective (the loss is unchanged), which a small generator can fit.
//
// Without own columns the generator sees only noise and can only match
// the distribution of the outputs, not any one row's: the paper's attack
// needs the adversary's features. Without the joint model or its outputs
// (the own-column baseline of [Run]), or without the own columns a top
// that reads them needs (the embedding-alone figure), it guesses the
// prior.
type GRN struct {
	Hidden, Noise, Steps, Batch int
	LR                          float32
	Prior                       float64
	Surrogate, FitSteps         int
}

// Name returns "grn".
func (*GRN) Name() string { return "grn" }

// NeedsJoint reports that GRN reads the joint model and its outputs
// (Input.Joint, Input.EvalScores), which the evaluator then provides.
func (*GRN) NeedsJoint() bool { return true }

// Reconstruct trains the generator on in's outputs and returns its
// guesses of the evaluated rows.
func (g *GRN) Reconstruct(in *Input) (*Guess, error) {
	if in.AuxTruth == nil || in.AuxTruth.Rows < 2 {
		return nil, fmt.Errorf("feature: grn needs at least 2 auxiliary rows")
	}
	if g.Hidden < 1 || g.Noise < 0 || g.Steps < 1 || g.Batch < 1 || !(g.LR > 0) || g.Prior < 0 || g.Surrogate < 1 || g.FitSteps < 1 {
		return nil, fmt.Errorf("feature: grn with %d hidden units, %d noise inputs, %d steps of %d rows, rate %g, prior weight %g",
			g.Hidden, g.Noise, g.Steps, g.Batch, g.LR, g.Prior)
	}
	n, nd := in.AuxTruth.Rows, in.AuxTruth.NumDense
	classes := levelsOf(in.AuxTruth, TargetClasses)
	y, m := targets(in.AuxTruth, classes)
	yMean, ySD := colMeans(y, n, m), colSDs(y, n, m)
	rows := evalRows(in)
	if in.Joint == nil || len(in.EvalScores) == 0 || in.AuxEmbed == nil || m == 0 || in.JointOwn && in.EvalOwn == nil {
		pred := make([]float64, rows*m)
		for r := range rows {
			copy(pred[r*m:(r+1)*m], yMean)
		}
		return decode(pred, rows, m, nd, classes), nil
	}
	if len(in.EvalScores) != rows || in.AuxEmbed.Rows != n {
		return nil, fmt.Errorf("feature: grn: %d outputs and %d auxiliary embeddings for %d evaluated and %d auxiliary rows",
			len(in.EvalScores), in.AuxEmbed.Rows, rows, n)
	}
	d := in.AuxEmbed.Cols
	ea := toFloat64(in.AuxEmbed)
	eMean, eSD := colMeans(ea, n, d), colSDs(ea, n, d)
	sur := newSurrogate(m, d, g.Surrogate, in.Seed)
	sur.fit(tensor.FromSlice(n, m, standardise(y, yMean, ySD, n, m)), tensor.FromSlice(n, d, standardise(ea, eMean, eSD, n, d)), g.FitSteps, g.LR)

	// The generator's inputs: the coded own columns (standardised by the
	// evaluated rows) and fixed noise.
	var own []float64
	p := 0
	if in.EvalOwn != nil {
		var err error
		if own, p, err = design(nil, in.EvalOwn, levelsOf(in.EvalOwn, TargetClasses), rows); err != nil {
			return nil, fmt.Errorf("feature: grn: %w", err)
		}
		own = standardiseCols(own, rows, p)
	}
	// The output each row must explain, standardised, is an input too.
	var vMean, vSD float64
	for _, v := range in.EvalScores {
		vMean += float64(v)
	}
	vMean /= float64(rows)
	for _, v := range in.EvalScores {
		vSD += (float64(v) - vMean) * (float64(v) - vMean)
	}
	vSD = math.Sqrt(vSD / float64(rows))
	if vSD < 1e-12 {
		vSD = 1
	}
	q := p + 1 + g.Noise
	rng := rand.New(rand.NewPCG(in.Seed, streamGRN))
	inputs := tensor.New(rows, q)
	for r := range rows {
		row := inputs.Row(r)
		for j := range p {
			row[j] = float32(own[r*p+j])
		}
		row[p] = float32((float64(in.EvalScores[r]) - vMean) / vSD)
		for j := p + 1; j < q; j++ {
			row[j] = float32(rng.NormFloat64())
		}
	}
	gen := &surrogate{l1: nn.NewDense(q, g.Hidden, nn.HeNormal, rng), relu: &nn.ReLU{}, l2: nn.NewDense(g.Hidden, m, nn.GlorotUniform, rng)}
	gen.params = append(slices.Clone(gen.l1.Params()), gen.l2.Params()...)
	opt := nn.NewAdam(g.LR)

	target := make([]float64, rows)
	for i, v := range in.EvalScores {
		target[i] = sigmoid(float64(v))
	}
	var ownBatch data.Batch
	order := seq(rows)
	shuffle := rand.New(rand.NewPCG(in.Seed, streamGRN+1))
	b := min(g.Batch, rows)
	xb := tensor.New(b, q)
	eb := tensor.New(b, d)
	dLogit := make([]float32, b)
	gOut := tensor.New(b, m)
	prior := float32(2 * g.Prior / float64(m) / float64(b)) // the loss is a mean over the batch's rows
	idx := make([]int, b)
	for s := range g.Steps {
		if s*b%rows < b {
			shuffle.Shuffle(rows, func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		for k := range b {
			idx[k] = order[(s*b+k)%rows]
			copy(xb.Row(k), inputs.Row(idx[k]))
		}
		z := gen.forward(xb) // standardised coded features
		e := sur.forward(z)  // standardised embedding
		for i := range b {
			for j := range d {
				eb.Data[i*d+j] = float32(float64(e.Data[i*d+j])*eSD[j] + eMean[j])
			}
		}
		var wide *data.Batch
		if in.JointOwn && in.EvalOwn != nil {
			in.EvalOwn.Gather(idx, &ownBatch)
			wide = &ownBatch
		}
		logits, err := in.Joint.Forward(eb, wide)
		if err != nil {
			return nil, fmt.Errorf("feature: grn: the joint model: %w", err)
		}
		for i, l := range logits {
			pr := sigmoid(float64(l))
			dLogit[i] = float32(2 * (pr - target[idx[i]]) * pr * (1 - pr) / float64(b))
		}
		ge, err := in.Joint.Backward(dLogit)
		if err != nil {
			return nil, fmt.Errorf("feature: grn: the joint model: %w", err)
		}
		// Through the embedding's standardisation and the surrogate.
		for i := range b {
			for j := range d {
				ge.Data[i*d+j] *= float32(eSD[j])
			}
		}
		gz := sur.l1.InputGrad(sur.relu.InputGrad(sur.l2.InputGrad(ge)))
		for i, v := range gz.Data {
			gOut.Data[i] = v + prior*z.Data[i]
		}
		gen.l1.Backward(gen.relu.Backward(gen.l2.Backward(gOut)))
		opt.Step(gen.params)
	}
	z := gen.forward(inputs)
	if err := tensor.CheckFinite("grn: the generated features", z); err != nil {
		return nil, err
	}
	pred := make([]float64, rows*m)
	for r := range rows {
		for j := range m {
			pred[r*m+j] = float64(z.Data[r*m+j])*ySD[j] + yMean[j]
		}
	}
	guess := decode(pred, rows, m, nd, classes)
	clipToRange(guess.Dense, in.AuxTruth.Dense, nd)
	return guess, nil
}

// standardiseCols scales every column of the rows×c matrix v to mean 0
// and deviation 1 in place (a constant column to 0) and returns it.
func standardiseCols(v []float64, rows, c int) []float64 {
	mean, sd := colMeans(v, rows, c), colSDs(v, rows, c)
	for r := range rows {
		for j := range c {
			v[r*c+j] = (v[r*c+j] - mean[j]) / sd[j]
		}
	}
	return v
}

// sigmoid is 1/(1 + e^{−x}).
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
