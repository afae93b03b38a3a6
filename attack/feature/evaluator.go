package feature

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// streamAux is the PCG stream of the attacker's auxiliary rows; streamEval
// that of the sample of a large test split.
const (
	streamAux  = 0xfea7a0c5
	streamEval = 0xfea7e7a1
)

// MaxEvalRows is the most test rows an evaluation reconstructs: a larger
// test split is represented by a seeded uniform sample of this many rows
// (the same at every evaluation), which bounds the evaluation's memory
// (the decoders' predictions are rows × targets values).
const MaxEvalRows = 20000

// AuxRows draws n of rows training rows uniformly without replacement, by
// seed, in ascending order; more than rows is an error.
func AuxRows(rows, n int, seed uint64) ([]int, error) {
	return sampleRows(rows, n, seed, streamAux)
}

// sampleRows draws n of rows rows uniformly without replacement from the
// PCG stream of seed, in ascending order.
func sampleRows(rows, n int, seed, stream uint64) ([]int, error) {
	if n > rows {
		return nil, configkey.Keyed(fmt.Errorf("the feature attacker's %d auxiliary rows exceed the %d training rows (key feature_aux)", n, rows), "feature_aux")
	}
	if n < 1 {
		return nil, configkey.Keyed(fmt.Errorf("the feature attacker has %d auxiliary rows (key feature_aux)", n), "feature_aux")
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	perm := make([]int, rows)
	for i := range perm {
		perm[i] = i
	}
	for i := 0; i < n; i++ {
		j := i + rng.IntN(rows-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	out := perm[:n:n]
	slices.Sort(out)
	return out, nil
}

// Encoder is what the embeddings come from: a passive party's bottom
// model (model.Bottom has these methods).
type Encoder interface {
	Forward(in *data.Batch) (*tensor.Matrix, error)
	CutDim() int
}

// Embed writes into dst the embeddings enc gives the given rows of x, in
// passes of at most chunk rows (0: 8192).
func Embed(enc Encoder, x *data.Features, rows []int, chunk int, dst *tensor.Matrix) error {
	if chunk <= 0 {
		chunk = 8192
	}
	d := enc.CutDim()
	dst.Resize(len(rows), d)
	var batch data.Batch
	for start := 0; start < len(rows); start += chunk {
		end := min(start+chunk, len(rows))
		x.Gather(rows[start:end], &batch)
		e, err := enc.Forward(&batch)
		if err != nil {
			return err
		}
		if e.Rows != end-start || e.Cols != d {
			return fmt.Errorf("feature: the bottom gave a %d×%d embedding for %d rows of width %d", e.Rows, e.Cols, end-start, d)
		}
		if err := tensor.CheckFinite("feature: embedding", e); err != nil {
			return err
		}
		copy(dst.Data[start*d:end*d], e.Data)
	}
	return nil
}

// Evaluator runs feature attacks at every evaluation of a run on fixed
// rows: n auxiliary rows of the training rows (AuxRows by the seed) and
// every test row (at most MaxEvalRows: a seeded sample of a larger test
// split), re-embedded by the bottom of the moment.
type Evaluator struct {
	attacks     []Attack
	train, test *data.Features
	truth       *data.Features // the evaluated test rows' passive features
	rows, all   []int
	chunk       int
	in          Input
	joint       func() (Joint, error)
}

// SetJoint gives the evaluator what returns a copy of the active party's
// top model at an evaluation (its state of the moment); readsOwn says
// the top reads the active's own columns. At every Run the copy scores
// the evaluated rows (Input.EvalScores) and is handed to the attacks
// (Input.Joint): GRN's white-box joint model and its outputs.
func (ev *Evaluator) SetJoint(newJoint func() (Joint, error), readsOwn bool) {
	ev.joint, ev.in.JointOwn = newJoint, readsOwn
}

// NewEvaluator returns the evaluator of the named attacks on the passive
// party's training and test features, with the active party's own
// columns of the same rows (nil, or features of no column: none), n
// auxiliary rows drawn by seed and chunk rows per forward pass.
func NewEvaluator(names []string, train, test, ownTrain, ownTest *data.Features, n int, seed uint64, chunk int) (*Evaluator, error) {
	if train == nil || test == nil || train.Image != nil {
		return nil, configkey.Keyed(fmt.Errorf("feature attacks (key feature_attacks) reconstruct table columns; the data are images"), "feature_attacks")
	}
	ev := &Evaluator{train: train, test: test, chunk: chunk}
	for _, name := range names {
		a, err := New(name)
		if err != nil {
			return nil, err
		}
		ev.attacks = append(ev.attacks, a)
	}
	var err error
	if ev.rows, err = AuxRows(train.Rows, n, seed); err != nil {
		return nil, err
	}
	ev.truth = test
	if test.Rows > MaxEvalRows {
		if ev.all, err = sampleRows(test.Rows, MaxEvalRows, seed, streamEval); err != nil {
			return nil, err
		}
		ev.truth = selectRows(test, ev.all)
	} else {
		ev.all = seq(test.Rows)
	}
	ev.in = Input{AuxTruth: selectRows(train, ev.rows), Seed: seed, AuxEmbed: &tensor.Matrix{}, EvalEmbed: &tensor.Matrix{}}
	if ownTrain != nil && ownTrain.NumCat+ownTrain.NumDense > 0 {
		if ownTrain.Rows != train.Rows || ownTest == nil || ownTest.Rows != test.Rows {
			return nil, fmt.Errorf("feature: the active party's columns cover other rows than the passive's")
		}
		ev.in.AuxOwn, ev.in.EvalOwn = selectRows(ownTrain, ev.rows), ownTest
		if ev.truth != test {
			ev.in.EvalOwn = selectRows(ownTest, ev.all)
		}
	}
	return ev, nil
}

// Run embeds the auxiliary and test rows with enc, runs every attack and
// returns their figures ([Result.Flatten]).
func (ev *Evaluator) Run(enc Encoder) (map[string]float64, error) {
	if err := Embed(enc, ev.train, ev.rows, ev.chunk, ev.in.AuxEmbed); err != nil {
		return nil, fmt.Errorf("feature attacks: auxiliary rows: %w", err)
	}
	if err := Embed(enc, ev.test, ev.all, ev.chunk, ev.in.EvalEmbed); err != nil {
		return nil, fmt.Errorf("feature attacks: test rows: %w", err)
	}
	if ev.joint != nil && ev.needsJoint() {
		if err := ev.score(); err != nil {
			return nil, fmt.Errorf("feature attacks: the joint model's outputs: %w", err)
		}
	}
	figs := map[string]float64{}
	for _, a := range ev.attacks {
		res, err := Run(a, &ev.in, ev.truth)
		if err != nil {
			return nil, err
		}
		res.Flatten(figs)
	}
	return figs, nil
}

// Add adds an attack instance the registry does not build (a run's
// hijacker, FSHA) to those run at every evaluation.
func (ev *Evaluator) Add(a Attack) { ev.attacks = append(ev.attacks, a) }

// AuxTruth returns the passive features of the auxiliary rows.
func (ev *Evaluator) AuxTruth() *data.Features { return ev.in.AuxTruth }

// selectRows returns the given rows of x.
func selectRows(x *data.Features, rows []int) *data.Features {
	return data.SelectRows(&data.Dataset{IDs: make([]uint64, x.Rows), X: x}, rows).X
}

// score sets Input.Joint to a fresh copy of the top and EvalScores to its
// logits of the evaluated rows (their embeddings and own columns).
func (ev *Evaluator) score() error {
	j, err := ev.joint()
	if err != nil {
		return err
	}
	var own *data.Batch
	if ev.in.JointOwn {
		if ev.in.EvalOwn == nil {
			return fmt.Errorf("the top reads the active's own columns, and the evaluation has none")
		}
		own = &data.Batch{}
		ev.in.EvalOwn.Gather(seq(ev.in.EvalOwn.Rows), own)
	}
	logits, err := j.Forward(ev.in.EvalEmbed, own)
	if err != nil {
		return err
	}
	ev.in.Joint, ev.in.EvalScores = j, append(ev.in.EvalScores[:0], logits...)
	return nil
}

// needsJoint reports whether an attack reads the joint model (declares
// NeedsJoint, as GRN does).
func (ev *Evaluator) needsJoint() bool {
	for _, a := range ev.attacks {
		if j, ok := a.(interface{ NeedsJoint() bool }); ok && j.NeedsJoint() {
			return true
		}
	}
	return false
}
