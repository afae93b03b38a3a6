package attack

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/internal/buf"
)

// TunedSuffix ends the name of a tuned attack: "norm_tuned" is the tuned
// attacker of "norm".
const TunedSuffix = "_tuned"

// Tuned is the tuned attacker of a per-batch attack (docs/methods/tuned.md):
// it knows the labels of the batch's known rows (Observation.Known and
// KnownLabels, N of them) and nothing else of the labels, and chooses the
// attack's parameters ([Tunable]) and the orientation of its score by a
// budgeted random search validated on those rows only.
//
// Its candidates are fixed for the run ([Candidates]: the defaults, then
// budget − 1 random settings). At every batch and layer the known rows are
// split into two folds by their position in Observation.Known (even, odd);
// for each fold holding both classes, every candidate scores the batch
// knowing only the other fold's labels, and its AUC over the fold's scored
// rows is added to the candidate's running sum at that layer. The
// candidate and orientation with the largest |mean fold AUC − ½| so far
// ([BestCandidate]) then score the batch knowing every known row; the
// known rows are not scored. Its Score reads no label beyond
// Observation.KnownLabels (and the hints of a hint attack, which are known
// positives); the tests check it by poisoning every other label.
//
// It costs 2·budget + 1 calls of the attack's Score per batch and layer,
// budget for a [BatchOnly] attack.
type Tuned struct {
	base    string
	needs   Needs
	params  []Param
	cands   []Values
	insts   []Attack
	layers  map[string]*tunedLayer
	sc      []float64
	scd     []bool
	fitRows []int
	fitLab  []uint8
	valRows []int
	valLab  []uint8
	isKnown []bool
	means   []float64
	cache   tunedCache // per batch, for a BatchOnly attack
}

// tunedLayer is the running validation record of every candidate at one
// layer.
type tunedLayer struct {
	sum   []float64
	folds []int
	best  int
	sign  float64
}

// NewTuned returns the tuned attacker of the per-batch attack registered
// under name, knowing known ≥ 2 rows of every batch and trying budget ≥ 1
// candidates drawn with seed ([Candidates]).
func NewTuned(name string, known, budget int, seed uint64) (*Tuned, error) {
	if _, err := New(name); err != nil {
		return nil, err
	}
	return NewTunedFrom(name, func() (Attack, error) { return New(name) }, known, budget, seed)
}

// NewTunedFrom is [NewTuned] for the attack that newAttack constructs
// (name is its name, which seeds its candidates).
func NewTunedFrom(name string, newAttack func() (Attack, error), known, budget int, seed uint64) (*Tuned, error) {
	if known < 2 || budget < 1 {
		return nil, fmt.Errorf("tuned attack %s: %d known rows and a budget of %d; want at least 2 and 1", name, known, budget)
	}
	first, err := newAttack()
	if err != nil {
		return nil, err
	}
	t := &Tuned{base: name, needs: first.Needs(), layers: map[string]*tunedLayer{}}
	t.needs.KnownRows = max(t.needs.KnownRows, known)
	if tu, ok := first.(Tunable); ok {
		t.params = tu.Params()
	}
	t.cands = Candidates(name, t.params, budget, seed)
	if t.insts, err = instances(name, first, newAttack, t.params, t.cands); err != nil {
		return nil, err
	}
	return t, nil
}

// instances returns one instance of the attack per candidate setting,
// each set to it: first (already built) for the first candidate, the
// defaults, and new ones from newAttack for the others. A per-batch and a
// model attack are tuned alike.
func instances[A Plugin](name string, first A, newAttack func() (A, error), params []Param, cands []Values) ([]A, error) {
	var out []A
	for i, c := range cands {
		inst := first
		if i > 0 {
			var err error
			if inst, err = newAttack(); err != nil {
				return nil, err
			}
		}
		if tu, ok := any(inst).(Tunable); ok {
			if err := checkValues(name, params, c); err != nil {
				return nil, err
			}
			if err := tu.SetParams(c); err != nil {
				return nil, err
			}
		}
		out = append(out, inst)
	}
	return out, nil
}

// Name implements Attack: the attack's name and [TunedSuffix].
func (t *Tuned) Name() string { return t.base + TunedSuffix }

// Base returns the name of the attack it tunes.
func (t *Tuned) Base() string { return t.base }

// Needs implements Attack: the attack's needs, with at least the known
// rows the tuner validates on.
func (t *Tuned) Needs() Needs { return t.needs }

// Params returns the attack's declared parameters (nil when it has none).
func (t *Tuned) Params() []Param { return t.params }

// Candidates returns the settings it tries, the defaults first.
func (t *Tuned) Candidates() []Values { return t.cands }

// TunedChoice is the tuned attacker's choice at a layer after the batches
// it has seen.
type TunedChoice struct {
	// Values is the chosen setting, with the orientation under SignKey.
	Values Values
	// Candidate is the chosen candidate's index (0: the defaults).
	Candidate int
	// MeanAUC is the chosen candidate's mean fold AUC before orientation
	// (NaN when no fold has been validated); Folds how many folds it
	// averages.
	MeanAUC float64
	Folds   int
}

// String writes the choice, e.g. "metric=inner sign=-1 (0.71 over 12 folds)".
func (c TunedChoice) String(params []Param) string {
	return fmt.Sprintf("%s (%.3f over %d folds)", c.Values.format(params), c.MeanAUC, c.Folds)
}

// Choice returns the choice at layer (ok false before its first batch).
func (t *Tuned) Choice(layer string) (TunedChoice, bool) {
	st, ok := t.layers[layer]
	if !ok {
		return TunedChoice{}, false
	}
	v := Values{}
	for k, x := range t.cands[st.best] {
		v[k] = x
	}
	v[SignKey] = st.sign
	mean := math.NaN()
	if st.folds[st.best] > 0 {
		mean = st.sum[st.best] / float64(st.folds[st.best])
	}
	return TunedChoice{Values: v, Candidate: st.best, MeanAUC: mean, Folds: st.folds[st.best]}, true
}

// Layers returns the layers it has scored.
func (t *Tuned) Layers() []string {
	out := make([]string, 0, len(t.layers))
	for l := range t.layers {
		out = append(out, l)
	}
	return out
}

// Score implements Attack (see [Tuned]). It returns an error when the
// known rows and their labels differ in number, a known row is outside the
// batch or given twice, or the attack fails.
func (t *Tuned) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(t.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	if len(obs.Known) != len(obs.KnownLabels) {
		return fmt.Errorf("attack %s at layer %q: %d known rows but %d known labels", t.Name(), obs.Layer, len(obs.Known), len(obs.KnownLabels))
	}
	t.isKnown = buf.Grow(t.isKnown, n)
	clear(t.isKnown)
	for k, j := range obs.Known {
		if j < 0 || j >= n || t.isKnown[j] {
			return fmt.Errorf("attack %s at layer %q: known row %d outside the batch of %d or given twice", t.Name(), obs.Layer, j, n)
		}
		if obs.KnownLabels[k] > 1 {
			return fmt.Errorf("attack %s at layer %q: known label %d of row %d, want 0 or 1", t.Name(), obs.Layer, obs.KnownLabels[k], j)
		}
		t.isKnown[j] = true
	}
	st := t.layers[obs.Layer]
	if st == nil {
		st = &tunedLayer{sum: make([]float64, len(t.cands)), folds: make([]int, len(t.cands)), sign: 1}
		t.layers[obs.Layer] = st
	}
	t.sc, t.scd = buf.Grow(t.sc, n), buf.Grow(t.scd, n)
	_, once := t.insts[0].(BatchOnly)
	if once {
		t.cache.reset(len(t.insts), n)
	}
	for f := range 2 {
		t.split(obs, f)
		if !bothClasses(t.valLab) {
			continue
		}
		o := *obs
		o.Known, o.KnownLabels = t.fitRows, t.fitLab
		for c, inst := range t.insts {
			sc, scd := t.sc, t.scd
			if once {
				if sc, scd, err = t.cache.score(inst, c, &o); err != nil {
					return err
				}
			} else {
				fill(t.scd, true)
				if err := inst.Score(&o, t.sc, t.scd); err != nil {
					return fmt.Errorf("tuned: %w", err)
				}
			}
			if auc, ok := pairAUC(sc, scd, t.valRows, t.valLab); ok {
				st.sum[c] += auc
				st.folds[c]++
			}
		}
	}
	t.means = buf.Grow(t.means, len(t.cands))
	for c := range t.means {
		t.means[c] = math.NaN()
		if st.folds[c] > 0 {
			t.means[c] = st.sum[c] / float64(st.folds[c])
		}
	}
	st.best, st.sign = BestCandidate(t.means)
	if once {
		sc, scd, err := t.cache.score(t.insts[st.best], st.best, obs)
		if err != nil {
			return err
		}
		copy(scores, sc)
		copy(scored, scd)
	} else if err := t.insts[st.best].Score(obs, scores, scored); err != nil {
		return fmt.Errorf("tuned: %w", err)
	}
	for i := range n {
		scores[i] *= st.sign
		if t.isKnown[i] {
			scored[i], scores[i] = false, 0
		}
	}
	return nil
}

// split sets the fit rows (known rows at positions of the other parity
// than f) and the validation rows (positions of parity f) with their
// labels.
func (t *Tuned) split(obs *Observation, f int) {
	t.fitRows, t.fitLab = t.fitRows[:0], t.fitLab[:0]
	t.valRows, t.valLab = t.valRows[:0], t.valLab[:0]
	for k, j := range obs.Known {
		if k%2 == f {
			t.valRows, t.valLab = append(t.valRows, j), append(t.valLab, obs.KnownLabels[k])
		} else {
			t.fitRows, t.fitLab = append(t.fitRows, j), append(t.fitLab, obs.KnownLabels[k])
		}
	}
}

// bothClasses reports whether y holds a 0 and a 1.
func bothClasses(y []uint8) bool {
	var seen [2]bool
	for _, v := range y {
		seen[v&1] = true
	}
	return seen[0] && seen[1]
}

// IsTunedName reports whether name is a tuned attack's ([TunedSuffix]) and
// returns the attack it tunes.
func IsTunedName(name string) (string, bool) {
	return strings.CutSuffix(name, TunedSuffix)
}

// State returns the running validation record at layer — every
// candidate's sum of fold AUCs and its number of folds — for a
// checkpoint (nil before the layer's first batch).
func (t *Tuned) State(layer string) (sum []float64, folds []int) {
	st, ok := t.layers[layer]
	if !ok {
		return nil, nil
	}
	return slices.Clone(st.sum), slices.Clone(st.folds)
}

// Restore sets the running validation record at layer from [Tuned.State]
// of a tuned attacker of the same attack, budget and seed. It returns an
// error when the numbers of candidates differ or a value is impossible.
func (t *Tuned) Restore(layer string, sum []float64, folds []int) error {
	if len(sum) != len(t.cands) || len(folds) != len(t.cands) {
		return fmt.Errorf("tuned attack %s at layer %q: a record of %d candidates, want %d", t.Name(), layer, len(sum), len(t.cands))
	}
	st := &tunedLayer{sum: slices.Clone(sum), folds: slices.Clone(folds), sign: 1}
	means := make([]float64, len(sum))
	for c := range sum {
		if folds[c] < 0 || !(sum[c] >= 0 && sum[c] <= float64(folds[c])) {
			return fmt.Errorf("tuned attack %s at layer %q: candidate %d has AUC sum %v over %d folds", t.Name(), layer, c, sum[c], folds[c])
		}
		means[c] = math.NaN()
		if folds[c] > 0 {
			means[c] = sum[c] / float64(folds[c])
		}
	}
	st.best, st.sign = BestCandidate(means)
	t.layers[layer] = st
	return nil
}
