package attack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	RegisterModel("completion", func() ModelAttack { return NewCompletion(true) })
	RegisterModel("completion_supervised", func() ModelAttack { return NewCompletion(false) })
}

// completionStream is the PCG stream of the head's initialisation.
const completionStream = 0xc0391e7e

// Completion is passive model completion (Fu et al., USENIX Security 2022,
// §4.1): the attacker puts a small head on the trained bottom's cut output
// and fits it on its known labels, optionally also on its unlabelled rows.
//
// The head is by default a logistic regression (Hidden = 0; Hidden > 0
// adds one hidden ReLU layer, the paper's MLP head), fitted full-batch with
// Adam on a class-balanced weighted binary cross-entropy plus a strong L2
// penalty on the weights (L2 = 1). Inputs are centred with the column means
// of the rows the attacker holds (known and unlabelled) and divided by
// their pooled deviation (one scale for every column; PerColumn scales each
// column to unit deviation instead). With 10–400 known labels the strongly
// penalised linear head is the robust choice: its weights tend to the
// difference of the class means, while an MLP head or per-column scaling
// (which blows up the rare activations of mostly-zero ReLU columns) fits
// the few known rows' noise and loses up to 0.2 of AUC on an unlucky draw
// (docs/methods/attacks-peer.md).
//
// The balanced weighting makes the head's implied prior ½; the attacker
// estimates the true positive share π on its unlabelled rows by the EM
// prior adjustment of Saerens, Latinne and Decaestecker (2002) and reports
// the adjusted probability πq/(πq + (1−π)(1−q)) of the head's output q
// (monotone in q: the AUC does not depend on it; the accuracy at ½ does).
//
// The semi-supervised variant is self-training by pseudo-labels (Lee 2013)
// in Rounds rounds: in round r the unlabelled rows are ranked by the
// current head, the top ρ·π·U are labelled positive and the bottom
// ρ·(1−π)·U negative with ρ = r/(Rounds+1), and a fresh head is fitted on
// the known rows (half the weight) and the pseudo-labelled ones (the other
// half), each class-balanced. It stands in for the MixMatch of the paper's
// appendix, whose gain comes from consistency under data augmentation:
// there is no label-preserving augmentation of a tabular row's cut output.
type Completion struct {
	// SemiSupervised turns on the pseudo-label rounds.
	SemiSupervised bool
	// Hidden is the head's hidden width (0: logistic regression); Steps
	// the Adam steps per fit; LR its learning rate; L2 the weight penalty;
	// Rounds the pseudo-label rounds.
	Hidden, Steps, Rounds int
	LR, L2                float64
	// PerColumn scales every column to unit deviation; otherwise the
	// columns are centred and share one scale (their pooled deviation).
	PerColumn bool
	// Prior is the positive share estimated at the last Complete.
	Prior float64

	mean, inv       []float64
	known, unl, tgt tensor.Matrix // standardised copies
	train           tensor.Matrix
	y, w            []float32
	q, qUnl         []float64
	order           []int
	dl              tensor.Matrix
	h1, h2          *nn.Dense
	relu            nn.ReLU
	calA, calB      float64 // probability σ(calA·logit + calB)
	knownLabels     []uint8
}

// NewCompletion returns the completion attack with its default settings
// (logistic regression, 300 Adam steps at learning rate 0.01, L2 1, pooled
// scaling, three pseudo-label rounds when semi-supervised).
func NewCompletion(semiSupervised bool) *Completion {
	return &Completion{SemiSupervised: semiSupervised, Hidden: 0, Steps: 300, Rounds: 3, LR: 0.01, L2: 1}
}

// completionHidden are the head widths the tuned attacker chooses among.
var completionHidden = []string{"0", "16", "64"}

// Params implements Tunable: the head's width (0: logistic regression),
// its Adam steps, learning rate and L2 penalty, the per-column scaling and,
// semi-supervised, the pseudo-label rounds (which set the shares ρ of
// pseudo-labelled rows).
func (a *Completion) Params() []Param {
	p := []Param{
		{Key: "hidden", Help: "hidden width of the head (0: logistic regression)", Choices: completionHidden},
		{Key: "steps", Help: "Adam steps per fit", Min: 100, Max: 600, Int: true, Default: 300},
		{Key: "lr", Help: "Adam learning rate", Min: 1e-3, Max: 0.1, Log: true, Default: 0.01},
		{Key: "l2", Help: "L2 penalty on the weights", Min: 0.01, Max: 10, Log: true, Default: 1},
		{Key: "per_column", Help: "scale every column to unit deviation", Choices: []string{"no", "yes"}},
	}
	if a.SemiSupervised {
		p = append(p, Param{Key: "rounds", Help: "pseudo-label rounds", Min: 0, Max: 5, Int: true, Default: 3})
	}
	return p
}

// SetParams implements Tunable.
func (a *Completion) SetParams(v Values) error {
	if err := checkValues(a.Name(), a.Params(), v); err != nil {
		return err
	}
	a.Hidden = [...]int{0, 16, 64}[int(v["hidden"])]
	a.Steps, a.LR, a.L2, a.PerColumn = int(v["steps"]), v["lr"], v["l2"], v["per_column"] == 1
	if a.SemiSupervised {
		a.Rounds = int(v["rounds"])
	}
	return nil
}

// Name implements ModelAttack.
func (a *Completion) Name() string {
	if a.SemiSupervised {
		return "completion"
	}
	return "completion_supervised"
}

// Needs implements ModelAttack.
func (a *Completion) Needs() Needs { return Needs{Input: Embedding, Model: true} }

// Complete implements ModelAttack.
func (a *Completion) Complete(in *CompletionInput, dst []float64) ([]float64, error) {
	d, err := in.check(a.Name())
	if err != nil {
		return nil, err
	}
	if a.Hidden < 0 || a.Steps < 1 || a.Rounds < 0 || !(a.LR > 0) || !(a.L2 >= 0) {
		return nil, fmt.Errorf("attack %s: hidden width %d, %d steps, %d rounds, learning rate %g and L2 %g: want hidden ≥ 0, steps ≥ 1, rounds ≥ 0, rate > 0, L2 ≥ 0", a.Name(), a.Hidden, a.Steps, a.Rounds, a.LR, a.L2)
	}
	nU := 0
	if in.Unlabelled != nil {
		nU = in.Unlabelled.Rows
	}
	a.standardise(in, d, nU)
	a.knownLabels = in.Labels

	// Supervised fit on the known rows.
	nK := in.Known.Rows
	a.y, a.w = buf.Grow(a.y, nK), buf.Grow(a.w, nK)
	setBalanced(a.y, a.w, in.Labels, 1)
	if err := a.fit(&a.known, in.Seed); err != nil {
		return nil, err
	}
	pos := 0
	for _, y := range in.Labels {
		pos += int(y)
	}
	a.Prior = float64(pos) / float64(nK)
	if nU > 0 {
		a.qUnl = a.predict(&a.unl, a.qUnl)
		a.Prior = EMPrior(a.qUnl, 0.5)
	}
	if a.SemiSupervised && nU > 0 {
		for r := 1; r <= a.Rounds; r++ {
			rho := float64(r) / float64(a.Rounds+1)
			if err := a.pseudoRound(in, d, rho, in.Seed+uint64(r)); err != nil {
				return nil, err
			}
			a.qUnl = a.predict(&a.unl, a.qUnl)
			a.Prior = EMPrior(a.qUnl, a.Prior)
		}
	}
	a.q = a.predict(&a.tgt, a.q)
	dst = buf.Grow(dst, in.Target.Rows)
	pi := a.Prior
	for i, q := range a.q {
		q = clampProb(q)
		dst[i] = pi * q / (pi*q + (1-pi)*(1-q))
	}
	return dst, nil
}

// standardise writes the standardised copies of the three matrices.
func (a *Completion) standardise(in *CompletionInput, d, nU int) {
	a.mean, a.inv = buf.Grow(a.mean, d), buf.Grow(a.inv, d)
	clear(a.mean)
	clear(a.inv)
	n := 0
	for _, m := range []*tensor.Matrix{in.Known, in.Unlabelled} {
		if m == nil {
			continue
		}
		for i := range m.Rows {
			for j, v := range m.Row(i) {
				a.mean[j] += float64(v)
			}
		}
		n += m.Rows
	}
	for j := range a.mean {
		a.mean[j] /= float64(n)
	}
	for _, m := range []*tensor.Matrix{in.Known, in.Unlabelled} {
		if m == nil {
			continue
		}
		for i := range m.Rows {
			for j, v := range m.Row(i) {
				dv := float64(v) - a.mean[j]
				a.inv[j] += dv * dv
			}
		}
	}
	if a.PerColumn {
		for j, s := range a.inv {
			if sd := math.Sqrt(s / float64(n)); sd > 1e-12 {
				a.inv[j] = 1 / sd
			} else {
				a.inv[j] = 0 // a constant column carries nothing
			}
		}
	} else {
		var total float64
		for _, s := range a.inv {
			total += s
		}
		inv := 0.0
		if rms := math.Sqrt(total / float64(n*d)); rms > 1e-12 {
			inv = 1 / rms
		}
		for j := range a.inv {
			a.inv[j] = inv
		}
	}
	scale := func(dst *tensor.Matrix, src *tensor.Matrix) {
		dst.Resize(src.Rows, d)
		for i := range src.Rows {
			out := dst.Row(i)
			for j, v := range src.Row(i) {
				out[j] = float32((float64(v) - a.mean[j]) * a.inv[j])
			}
		}
	}
	scale(&a.known, in.Known)
	scale(&a.tgt, in.Target)
	if nU > 0 {
		scale(&a.unl, in.Unlabelled)
	} else {
		a.unl.Resize(0, d)
	}
}

// pseudoRound labels the top ρπU unlabelled rows positive and the bottom
// ρ(1−π)U negative by the current head's qUnl, and fits a fresh head on
// them and the known rows.
func (a *Completion) pseudoRound(in *CompletionInput, d int, rho float64, seed uint64) error {
	nU, nK := a.unl.Rows, a.known.Rows
	kPos := int(math.Round(rho * a.Prior * float64(nU)))
	kNeg := int(math.Round(rho * (1 - a.Prior) * float64(nU)))
	if kPos < 1 || kNeg < 1 {
		return nil // too few unlabelled rows to add either class
	}
	a.order = buf.Grow(a.order, nU)
	for i := range a.order {
		a.order[i] = i
	}
	q := a.qUnl
	slices.SortStableFunc(a.order, func(i, j int) int {
		switch {
		case q[i] > q[j]:
			return -1
		case q[i] < q[j]:
			return 1
		}
		return 0
	})
	n := nK + kPos + kNeg
	a.train.Resize(n, d)
	copy(a.train.Data, a.known.Data[:nK*d])
	a.y, a.w = buf.Grow(a.y, n), buf.Grow(a.w, n)
	setBalanced(a.y[:nK], a.w[:nK], in.Labels, 0.5)
	r := nK
	for k, row := range a.order {
		var y float32
		switch {
		case k < kPos:
			y = 1
		case k >= nU-kNeg:
			y = 0
		default:
			continue
		}
		copy(a.train.Row(r), a.unl.Row(row))
		a.y[r] = y
		if y == 1 {
			a.w[r] = float32(0.25 / float64(kPos))
		} else {
			a.w[r] = float32(0.25 / float64(kNeg))
		}
		r++
	}
	return a.fit(&a.train, seed)
}

// setBalanced sets y from labels and w so that each class weighs total/2.
func setBalanced(y, w []float32, labels []uint8, total float64) {
	pos := 0
	for _, l := range labels {
		pos += int(l)
	}
	wp, wn := float32(total/2/float64(pos)), float32(total/2/float64(len(labels)-pos))
	for i, l := range labels {
		y[i] = float32(l)
		if l == 1 {
			w[i] = wp
		} else {
			w[i] = wn
		}
	}
}

// fit trains a fresh head on x with targets a.y and weights a.w (Σw = 1):
// a logistic regression when Hidden is 0, else one hidden ReLU layer.
func (a *Completion) fit(x *tensor.Matrix, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, completionStream))
	if a.Hidden > 0 {
		a.h1 = nn.NewDense(x.Cols, a.Hidden, nn.HeNormal, rng)
		a.h1.SkipInputGrad = true
		a.h2 = nn.NewDense(a.Hidden, 1, nn.GlorotUniform, rng)
	} else {
		a.h1 = nil
		a.h2 = nn.NewDense(x.Cols, 1, nn.GlorotUniform, rng)
		a.h2.SkipInputGrad = true
	}
	layers := []*nn.Dense{a.h2}
	params := slices.Clone(a.h2.Params())
	if a.h1 != nil {
		layers = append(layers, a.h1)
		params = append(params, a.h1.Params()...)
	}
	opt := nn.NewAdam(float32(a.LR))
	n := x.Rows
	a.dl.Resize(n, 1)
	l2 := float32(a.L2)
	for step := range a.Steps {
		out := a.forward(x)
		for i := range n {
			p := sigmoid(float64(out.Data[i]))
			a.dl.Data[i] = a.w[i] * float32(p-float64(a.y[i]))
		}
		if a.h1 != nil {
			a.h1.Backward(a.relu.Backward(a.h2.Backward(&a.dl)))
		} else {
			a.h2.Backward(&a.dl)
		}
		for _, m := range layers {
			g := m.Params()[0].G.Data
			for k, v := range m.W.Data {
				g[k] += l2 * v
			}
		}
		opt.Step(params)
		if step == a.Steps-1 {
			for _, m := range layers {
				if k := firstNonFinite(m.W.Data); k >= 0 {
					return fmt.Errorf("attack %s: the head diverged (weight %d is %v)", a.Name(), k, m.W.Data[k])
				}
			}
		}
	}
	a.calibrate()
	return nil
}

// calibrate sets the map from the head's logit to a probability under a
// prior of ½ by a 1-D linear discriminant on the known rows' logits: with
// class means μ₁, μ₀ and pooled variance σ², the log-likelihood ratio of
// Gaussian class-conditionals is a·(ℓ − (μ₁+μ₀)/2), a = (μ₁−μ₀)/σ². A
// strongly penalised head's own σ(ℓ) stays near ½ whatever its ranking;
// this makes the EM prior estimate and the accuracy meaningful.
func (a *Completion) calibrate() {
	out := a.forward(&a.known)
	var s [2]float64
	var c [2]int
	for i, y := range a.knownLabels {
		s[y] += float64(out.Data[i])
		c[y]++
	}
	mu0, mu1 := s[0]/float64(c[0]), s[1]/float64(c[1])
	var ss float64
	for i, y := range a.knownLabels {
		m := mu0
		if y == 1 {
			m = mu1
		}
		d := float64(out.Data[i]) - m
		ss += d * d
	}
	v := ss / float64(max(len(a.knownLabels)-2, 1))
	v = max(v, 1e-6*(mu1-mu0)*(mu1-mu0), 1e-12) // separable known rows: a steep, finite slope
	a.calA = (mu1 - mu0) / v
	a.calB = -a.calA * (mu1 + mu0) / 2
}

// forward returns the head's logits for x (x.Rows×1).
func (a *Completion) forward(x *tensor.Matrix) *tensor.Matrix {
	if a.h1 == nil {
		return a.h2.Forward(x)
	}
	return a.h2.Forward(a.relu.Forward(a.h1.Forward(x)))
}

// predict writes the head's probability for each row of x into dst.
func (a *Completion) predict(x *tensor.Matrix, dst []float64) []float64 {
	dst = buf.Grow(dst, x.Rows)
	if x.Rows == 0 {
		return dst
	}
	out := a.forward(x)
	for i := range x.Rows {
		dst[i] = sigmoid(a.calA*float64(out.Data[i]) + a.calB)
	}
	return dst
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func clampProb(q float64) float64 { return min(max(q, 1e-6), 1-1e-6) }

// EMPrior estimates the positive share of rows whose posteriors q were
// computed under a prior of ½ (Saerens, Latinne and Decaestecker 2002):
// it iterates π ← mean_i πq_i/(πq_i + (1−π)(1−q_i)) from start until π
// moves by less than 10⁻⁹ (at most 1000 rounds), and keeps the result
// within [1/(n+2), 1 − 1/(n+2)]. With no rows it returns start.
func EMPrior(q []float64, start float64) float64 {
	n := len(q)
	if n == 0 {
		return start
	}
	lo := 1 / float64(n+2)
	pi := min(max(start, lo), 1-lo)
	for range 1000 {
		var s float64
		for _, v := range q {
			v = clampProb(v)
			s += pi * v / (pi*v + (1-pi)*(1-v))
		}
		next := min(max(s/float64(n), lo), 1-lo)
		if math.Abs(next-pi) < 1e-9 {
			return next
		}
		pi = next
	}
	return pi
}
