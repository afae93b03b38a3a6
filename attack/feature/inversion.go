package feature

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// streamInversion is the PCG stream of the surrogate bottom's
// initialisation.
const streamInversion = 0x1a7e25e

func init() {
	Register("inversion", func() Attack {
		return &Inversion{Hidden: 64, FitSteps: 400, InvertSteps: 300, LR: 3e-3, InvLR: 0.05, Prior: 0.1}
	})
}

// Inversion is model inversion with a reconstructed bottom: the attacker,
// who knows the passive features of the auxiliary rows and saw their
// embeddings, fits a surrogate of the passive party's bottom model from
// features to embedding, then inverts it — for every evaluated embedding
// e it searches the features x whose surrogate embedding is closest,
//
//	x̂ = argmin_x ‖f̂(x) − e‖²/d + λ·‖x‖²/m,
//
// by full-batch Adam over InvertSteps steps, started from the features of
// the auxiliary row whose embedding is the nearest (x, e standardised with
// the auxiliary rows' means and deviations; λ = Prior pulls a row towards
// that mean where the embedding does not decide). The features are coded as the decoders' targets (dense
// columns, and one indicator per frequent class of each categorical
// column, [TargetClasses]); a guess decodes them as the decoders' do.
// The surrogate has one hidden layer of Hidden ReLU units (0: linear),
// trained by full-batch Adam on the mean squared error over FitSteps
// steps at rate LR. It reads no column of the active party's own: for the
// own-column baseline it guesses the prior (the auxiliary means and
// majority classes).
//
// With the true bottom in place of the surrogate this is the white-box
// inversion of the literature (He et al., "Model inversion attacks
// against collaborative inference", ACSAC 2019, "rMLE"); the surrogate
// fitted on auxiliary rows is their query-free variant, the one an active
// party that never holds the bottom can run.
type Inversion struct {
	Hidden, FitSteps, InvertSteps int
	LR, InvLR                     float32
	Prior                         float64
}

// Name returns "inversion".
func (*Inversion) Name() string { return "inversion" }

// Reconstruct fits the surrogate on in's auxiliary rows and inverts it
// at the evaluated rows' embeddings.
func (v *Inversion) Reconstruct(in *Input) (*Guess, error) {
	if in.AuxTruth == nil || in.AuxTruth.Rows < 2 {
		return nil, fmt.Errorf("feature: %s needs at least 2 auxiliary rows", v.Name())
	}
	if v.Hidden < 0 || v.FitSteps < 1 || v.InvertSteps < 1 || !(v.LR > 0) || !(v.InvLR > 0) || v.Prior < 0 {
		return nil, fmt.Errorf("feature: %s with %d hidden units, %d and %d steps, rates %g and %g, prior weight %g",
			v.Name(), v.Hidden, v.FitSteps, v.InvertSteps, v.LR, v.InvLR, v.Prior)
	}
	n, nd := in.AuxTruth.Rows, in.AuxTruth.NumDense
	classes := levelsOf(in.AuxTruth, TargetClasses)
	y, m := targets(in.AuxTruth, classes)
	yMean, ySD := colMeans(y, n, m), colSDs(y, n, m)
	rows := evalRows(in)
	pred := make([]float64, rows*m)
	if in.AuxEmbed == nil || in.EvalEmbed == nil || m == 0 {
		for r := range rows {
			copy(pred[r*m:(r+1)*m], yMean)
		}
		return decode(pred, rows, m, nd, classes), nil
	}
	if in.AuxEmbed.Rows != n || in.EvalEmbed.Rows != rows || in.EvalEmbed.Cols != in.AuxEmbed.Cols {
		return nil, fmt.Errorf("feature: %s: %d×%d auxiliary and %d×%d evaluated embeddings for %d and %d rows",
			v.Name(), in.AuxEmbed.Rows, in.AuxEmbed.Cols, in.EvalEmbed.Rows, in.EvalEmbed.Cols, n, rows)
	}
	d := in.AuxEmbed.Cols
	ea, ee := toFloat64(in.AuxEmbed), toFloat64(in.EvalEmbed)
	eMean, eSD := colMeans(ea, n, d), colSDs(ea, n, d)
	x := tensor.FromSlice(n, m, standardise(y, yMean, ySD, n, m))
	target := tensor.FromSlice(n, d, standardise(ea, eMean, eSD, n, d))
	sur := newSurrogate(m, d, v.Hidden, in.Seed)
	sur.fit(x, target, v.FitSteps, v.LR)
	eval := tensor.FromSlice(rows, d, standardise(ee, eMean, eSD, rows, d))
	z, err := sur.invert(eval, nearestRows(eval, target, x), v.InvertSteps, v.InvLR, v.Prior)
	if err != nil {
		return nil, fmt.Errorf("feature: %s: %w", v.Name(), err)
	}
	for r := range rows {
		for j := range m {
			pred[r*m+j] = float64(z.Data[r*m+j])*ySD[j] + yMean[j]
		}
	}
	g := decode(pred, rows, m, nd, classes)
	clipToRange(g.Dense, in.AuxTruth.Dense, nd)
	return g, nil
}

// nearestRows returns, for every row of e, the row of x whose embedding
// (the same row of ea) is the nearest to it in Euclidean distance: the
// inversion's start. Starting from the auxiliary mean instead can leave
// every hidden unit of the surrogate off (all its pre-activations ≤ 0 at
// the mean), where the gradient is zero and the search never moves.
func nearestRows(e, ea, x *tensor.Matrix) *tensor.Matrix {
	dot := tensor.New(e.Rows, ea.Rows)
	tensor.MatMul(dot, e, false, ea, true, 1, 0)
	sq := make([]float32, ea.Rows)
	for i := range ea.Rows {
		for _, v := range ea.Row(i) {
			sq[i] += v * v
		}
	}
	out := tensor.New(e.Rows, x.Cols)
	for r := range e.Rows {
		best, bestD := 0, float32(math.Inf(1))
		for i, v := range dot.Row(r) {
			if dist := sq[i] - 2*v; dist < bestD { // ‖e_r‖² is the same for every i
				best, bestD = i, dist
			}
		}
		copy(out.Row(r), x.Row(best))
	}
	return out
}

// toFloat64 copies a matrix's values.
func toFloat64(m *tensor.Matrix) []float64 {
	out := make([]float64, len(m.Data))
	for i, v := range m.Data {
		out[i] = float64(v)
	}
	return out
}

// surrogate is the attacker's model of the bottom: Dense (→ ReLU → Dense).
type surrogate struct {
	l1, l2 *nn.Dense
	relu   *nn.ReLU
	params []*nn.Param
}

func newSurrogate(in, out, hidden int, seed uint64) *surrogate {
	rng := rand.New(rand.NewPCG(seed, streamInversion))
	if hidden == 0 {
		l1 := nn.NewDense(in, out, nn.GlorotUniform, rng)
		return &surrogate{l1: l1, params: slices.Clone(l1.Params())}
	}
	s := &surrogate{l1: nn.NewDense(in, hidden, nn.HeNormal, rng), relu: &nn.ReLU{}, l2: nn.NewDense(hidden, out, nn.GlorotUniform, rng)}
	s.params = append(slices.Clone(s.l1.Params()), s.l2.Params()...)
	return s
}

func (s *surrogate) forward(x *tensor.Matrix) *tensor.Matrix {
	h := s.l1.Forward(x)
	if s.l2 == nil {
		return h
	}
	return s.l2.Forward(s.relu.Forward(h))
}

// fit trains the surrogate on the mean squared error of (x, y).
func (s *surrogate) fit(x, y *tensor.Matrix, steps int, lr float32) {
	opt := nn.NewAdam(lr)
	grad := tensor.New(y.Rows, y.Cols)
	scale := 2 / float32(y.Rows)
	for range steps {
		out := s.forward(x)
		for i, o := range out.Data {
			grad.Data[i] = scale * (o - y.Data[i])
		}
		if s.l2 == nil {
			s.l1.Backward(grad)
		} else {
			s.l1.Backward(s.relu.Backward(s.l2.Backward(grad)))
		}
		opt.Step(s.params)
	}
}

// invert returns the inputs z (e.Rows × the surrogate's input width),
// started at z0 (which it overwrites), that minimise Σ_r ‖f̂(z_r) − e_r‖²/d
// + λ‖z_r‖²/m, by Adam with the surrogate's weights held.
func (s *surrogate) invert(e, z0 *tensor.Matrix, steps int, lr float32, lambda float64) (*tensor.Matrix, error) {
	m, d := s.l1.In(), e.Cols
	z := z0
	dz := tensor.New(e.Rows, m)
	param := []*nn.Param{{Name: "inversion.z", W: z, G: dz}}
	opt := nn.NewAdam(lr)
	grad := tensor.New(e.Rows, d)
	scale, prior := 2/float32(d), float32(2*lambda/float64(m))
	for range steps {
		out := s.forward(z)
		for i, o := range out.Data {
			grad.Data[i] = scale * (o - e.Data[i])
		}
		var gz *tensor.Matrix
		if s.l2 == nil {
			gz = s.l1.InputGrad(grad)
		} else {
			gz = s.l1.InputGrad(s.relu.InputGrad(s.l2.InputGrad(grad)))
		}
		for i, g := range gz.Data {
			dz.Data[i] = g + prior*z.Data[i]
		}
		opt.Step(param)
	}
	if err := tensor.CheckFinite("the inverted features", z); err != nil {
		return nil, err
	}
	return z, nil
}
