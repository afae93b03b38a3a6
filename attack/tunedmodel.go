package attack

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// TunedModel is the tuned attacker of a model attack (docs/methods/tuned.md):
// it chooses the attack's parameters ([Tunable]) and the orientation of its
// probability by random search over [Candidates], validated by two-fold
// cross-validation on the attacker's known rows only (CompletionInput.Known
// and Labels). Fold f holds, within each class, the known rows of even
// (f = 0) or odd (f = 1) rank in the order given. Every candidate is fitted
// on one fold (with the unlabelled rows) and scores the other; the
// candidate and orientation with the largest |mean fold AUC − ½| ([BestCandidate])
// is then fitted on every known row and scores the target rows, its
// probability p reported as 1 − p when the orientation is −1. A fold
// without a row of each class is not validated. Unlike [Tuned], it keeps no
// record across calls: every call (each evaluation) chooses afresh.
//
// It costs 2·budget + 1 fits per call.
type TunedModel struct {
	base   string
	params []Param
	cands  []Values
	insts  []ModelAttack
	last   TunedChoice

	fit, val       tensor.Matrix
	fitLab, valLab []uint8
	scores         []float64
}

// NewTunedModel returns the tuned attacker of the model attack registered
// under name, trying budget ≥ 1 candidates drawn with seed.
func NewTunedModel(name string, budget int, seed uint64) (*TunedModel, error) {
	if _, err := NewModel(name); err != nil {
		return nil, err
	}
	return NewTunedModelFrom(name, func() (ModelAttack, error) { return NewModel(name) }, budget, seed)
}

// NewTunedModelFrom is [NewTunedModel] for the attack that newAttack
// constructs (name is its name, which seeds its candidates).
func NewTunedModelFrom(name string, newAttack func() (ModelAttack, error), budget int, seed uint64) (*TunedModel, error) {
	if budget < 1 {
		return nil, fmt.Errorf("tuned attack %s: a budget of %d; want at least 1", name, budget)
	}
	first, err := newAttack()
	if err != nil {
		return nil, err
	}
	t := &TunedModel{base: name}
	if tu, ok := first.(Tunable); ok {
		t.params = tu.Params()
	}
	t.cands = Candidates(name, t.params, budget, seed)
	if t.insts, err = instances(name, first, newAttack, t.params, t.cands); err != nil {
		return nil, err
	}
	return t, nil
}

// Name implements ModelAttack: the attack's name and [TunedSuffix].
func (t *TunedModel) Name() string { return t.base + TunedSuffix }

// Needs implements ModelAttack: the attack's.
func (t *TunedModel) Needs() Needs { return t.insts[0].Needs() }

// Params returns the attack's declared parameters.
func (t *TunedModel) Params() []Param { return t.params }

// Candidates returns the settings it tries, the defaults first.
func (t *TunedModel) Candidates() []Values { return t.cands }

// Choice returns the choice of the last call (Folds counts the validated
// folds, 0 or 1 or 2).
func (t *TunedModel) Choice() TunedChoice { return t.last }

// Chosen returns the attack instance the last call chose.
func (t *TunedModel) Chosen() ModelAttack { return t.insts[t.last.Candidate] }

// Complete implements ModelAttack.
func (t *TunedModel) Complete(in *CompletionInput, dst []float64) ([]float64, error) {
	if _, err := in.check(t.Name()); err != nil {
		return nil, err
	}
	sum := make([]float64, len(t.cands))
	folds := 0
	for f := range 2 {
		t.split(in, f)
		if !bothClasses(t.fitLab) || !bothClasses(t.valLab) {
			continue
		}
		folds++
		sub := &CompletionInput{Known: &t.fit, Labels: t.fitLab, Unlabelled: in.Unlabelled, Target: &t.val, Seed: in.Seed}
		idx := make([]int, t.val.Rows)
		for i := range idx {
			idx[i] = i
		}
		scored := make([]bool, t.val.Rows)
		fill(scored, true)
		for c, inst := range t.insts {
			var err error
			if t.scores, err = inst.Complete(sub, t.scores); err != nil {
				return nil, fmt.Errorf("tuned: %w", err)
			}
			auc, _ := pairAUC(t.scores, scored, idx, t.valLab)
			sum[c] += auc
		}
	}
	means := make([]float64, len(t.cands))
	for c := range means {
		means[c] = math.NaN()
		if folds > 0 {
			means[c] = sum[c] / float64(folds)
		}
	}
	best, sign := BestCandidate(means)
	v := Values{SignKey: sign}
	for k, x := range t.cands[best] {
		v[k] = x
	}
	t.last = TunedChoice{Values: v, Candidate: best, MeanAUC: means[best], Folds: folds}
	dst, err := t.insts[best].Complete(in, dst)
	if err != nil {
		return nil, fmt.Errorf("tuned: %w", err)
	}
	if sign < 0 {
		for i, p := range dst {
			dst[i] = 1 - p
		}
	}
	return dst, nil
}

// split copies into t.fit and t.val the known rows of the other fold and
// of fold f: within each class, the rows of rank ≠ f and = f modulo 2.
func (t *TunedModel) split(in *CompletionInput, f int) {
	t.fitLab, t.valLab = t.fitLab[:0], t.valLab[:0]
	var rank [2]int
	var fitRows, valRows []int
	for i, y := range in.Labels {
		if rank[y&1]%2 == f {
			valRows = append(valRows, i)
			t.valLab = append(t.valLab, y)
		} else {
			fitRows = append(fitRows, i)
			t.fitLab = append(t.fitLab, y)
		}
		rank[y&1]++
	}
	copyRows(&t.fit, in.Known, fitRows)
	copyRows(&t.val, in.Known, valRows)
}

// copyRows sets dst to the rows of src, in order.
func copyRows(dst, src *tensor.Matrix, rows []int) {
	dst.Resize(len(rows), src.Cols)
	for k, i := range rows {
		copy(dst.Row(k), src.Row(i))
	}
}
