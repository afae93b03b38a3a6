// Package completion runs the model-completion attacks (attack.ModelAttack)
// against a trained bottom model: it chooses the attacker's known-label
// and unlabelled training rows, computes their cut outputs and those of
// the test split with the bottom, lets each attack fit its head and score
// the test rows, and measures the scores against the true test labels.
//
// It is the evaluation side of the attack: it holds the labels the
// attacker is given and the true test labels it is scored against, so
// the passive party (which never sees a label) does not import it. The
// in-process run calls it at every test evaluation; `splitguard attack
// completion` runs it on a finished run directory.
package completion

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultUnlabelled is how many unlabelled training rows the attacker
// uses (a seeded sample; all of them when there are fewer).
const DefaultUnlabelled = 2000

// streamPick is the PCG stream of the choice of rows.
const streamPick = 0xc0b1e7

// Rows are the attacker's training rows: the known-label rows with their
// labels and the unlabelled rows, as indices into the training split.
type Rows struct {
	Known       []int
	KnownLabels []uint8
	Unlabelled  []int
}

// Pick draws the attacker's rows from the training labels: n known rows,
// ⌊n/2⌋ positives and the rest negatives, each uniformly from its class,
// then up to maxUnlabelled of the other rows; all by seed, independent of
// anything else the run draws. It is an error when n < 2 or a class has
// fewer rows than its share.
func Pick(labels []uint8, n, maxUnlabelled int, seed uint64) (*Rows, error) {
	if n < 2 {
		return nil, config.Keyed(fmt.Errorf("completion: %d known labels, want at least 2, one of each class (key known_labels)", n), "known_labels")
	}
	var pos, neg []int
	for i, y := range labels {
		if y == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	wantPos, wantNeg := n/2, n-n/2
	if len(pos) < wantPos || len(neg) < wantNeg {
		return nil, config.Keyed(fmt.Errorf("completion: %d known labels need %d positive and %d negative training rows; the training split has %d and %d (key known_labels)",
			n, wantPos, wantNeg, len(pos), len(neg)), "known_labels")
	}
	r := rand.New(rand.NewPCG(seed, streamPick))
	r.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
	r.Shuffle(len(neg), func(i, j int) { neg[i], neg[j] = neg[j], neg[i] })
	rows := &Rows{}
	for _, i := range pos[:wantPos] {
		rows.Known = append(rows.Known, i)
		rows.KnownLabels = append(rows.KnownLabels, 1)
	}
	for _, i := range neg[:wantNeg] {
		rows.Known = append(rows.Known, i)
		rows.KnownLabels = append(rows.KnownLabels, 0)
	}
	rest := append(pos[wantPos:], neg[wantNeg:]...)
	rows.Unlabelled = sample(rest, maxUnlabelled, r)
	return rows, nil
}

// FromLabels takes the attacker's known labels by example ID (a file the
// attacker supplies, e.g. to attack a two-party run's passive directory):
// every training row whose ID is in known is a known row; up to
// maxUnlabelled of the others, chosen by seed, are unlabelled. IDs that
// are not training rows are ignored and counted in the second result.
func FromLabels(trainIDs []uint64, known map[uint64]uint8, maxUnlabelled int, seed uint64) (*Rows, int, error) {
	rows := &Rows{}
	var rest []int
	for i, id := range trainIDs {
		if y, ok := known[id]; ok {
			rows.Known = append(rows.Known, i)
			rows.KnownLabels = append(rows.KnownLabels, y)
		} else {
			rest = append(rest, i)
		}
	}
	pos := 0
	for _, y := range rows.KnownLabels {
		pos += int(y)
	}
	if pos == 0 || pos == len(rows.Known) {
		return nil, 0, fmt.Errorf("completion: %d of the known labels are training rows, %d of them positive; both classes are needed",
			len(rows.Known), pos)
	}
	r := rand.New(rand.NewPCG(seed, streamPick))
	rows.Unlabelled = sample(rest, maxUnlabelled, r)
	return rows, len(known) - len(rows.Known), nil
}

// sample returns up to k of rows chosen uniformly by r, ascending.
func sample(rows []int, k int, r *rand.Rand) []int {
	rows = slices.Clone(rows)
	if len(rows) > k {
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		rows = rows[:max(k, 0)]
	}
	slices.Sort(rows)
	return rows
}

// Result is one attack's figures on the test split.
type Result struct {
	// AUC is the exact AUC of the attack's scores against the true test
	// labels; Accuracy the share of rows its probability ≥ ½ classifies
	// right; Prior the positive share it estimated.
	AUC, Accuracy, Prior float64
}

// Attacker runs the model attacks of a run.
type Attacker struct {
	names   []string
	attacks []attack.ModelAttack
	rows    *Rows
	seed    uint64
	chunk   int

	known, unl, test tensor.Matrix
	batch            data.Batch
	scores           map[string][]float64
	// testDone: a.test holds the cut output of the test rows for an
	// unchanged bottom (set by Redraw).
	testDone bool
}

// New returns the attacker running the model attacks among names (others
// are ignored) from rows, or nil when names holds none. chunk is the
// number of rows per forward pass (0: 8192).
func New(names []string, rows *Rows, chunk int, seed uint64) (*Attacker, error) {
	names = attack.ModelNames(names)
	if len(names) == 0 {
		return nil, nil
	}
	if chunk <= 0 {
		chunk = 8192
	}
	a := &Attacker{names: names, rows: rows, seed: seed, chunk: chunk, scores: map[string][]float64{}}
	for _, n := range names {
		m, err := attack.NewModel(n)
		if err != nil {
			return nil, err
		}
		a.attacks = append(a.attacks, m)
	}
	return a, nil
}

// Tune adds beside every model attack its tuned attacker
// (attack.TunedModel, docs/methods/tuned.md), which chooses the attack's
// parameters by cross-validation on the same known rows, trying budget
// candidates drawn with the attacker's seed; its figures are keyed
// "ATTACK_tuned". Call it once, before Run.
func (a *Attacker) Tune(budget int) error {
	n := len(a.attacks)
	for k := range n {
		tm, err := attack.NewTunedModel(a.names[k], budget, a.seed)
		if err != nil {
			return err
		}
		a.names = append(a.names, tm.Name())
		a.attacks = append(a.attacks, tm)
	}
	return nil
}

// TunedChoices returns every tuned model attacker's choice at the last
// Run, keyed by its name (nil without tuned attackers).
func (a *Attacker) TunedChoices() map[string]string {
	var out map[string]string
	for _, m := range a.attacks {
		if tm, ok := m.(*attack.TunedModel); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[tm.Name()] = tm.Choice().String(tm.Params())
		}
	}
	return out
}

// Redraw sets new attacker rows and seed for the next Run, which then
// reuses the test rows' cut outputs of the last Run: the bottom must not
// have changed in between (offline, several draws of known labels).
func (a *Attacker) Redraw(rows *Rows, seed uint64) {
	a.rows, a.seed, a.testDone = rows, seed, a.test.Rows > 0
}

// Names returns the attacks run, in order.
func (a *Attacker) Names() []string { return a.names }

// Scores returns the last scores of the named attack on the test rows.
func (a *Attacker) Scores(name string) []float64 { return a.scores[name] }

// Run computes the cut outputs of the attacker's rows of train and of
// every row of test with bottom, runs every attack and, when testLabels
// is not nil, scores it. The bottom must not be in use by anyone else
// during the call.
func (a *Attacker) Run(bottom model.Bottom, train, test *data.Features, testLabels []uint8) (map[string]Result, error) {
	if err := Embed(bottom, train, a.rows.Known, a.chunk, &a.batch, &a.known); err != nil {
		return nil, fmt.Errorf("completion: known rows: %w", err)
	}
	if err := Embed(bottom, train, a.rows.Unlabelled, a.chunk, &a.batch, &a.unl); err != nil {
		return nil, fmt.Errorf("completion: unlabelled rows: %w", err)
	}
	if !a.testDone || a.test.Rows != test.Rows {
		all := make([]int, test.Rows)
		for i := range all {
			all[i] = i
		}
		if err := Embed(bottom, test, all, a.chunk, &a.batch, &a.test); err != nil {
			return nil, fmt.Errorf("completion: test rows: %w", err)
		}
	}
	a.testDone = false
	return a.complete(testLabels)
}

// RunPooled is Run for colluding passive parties, who pool what they
// hold: the attack reads each row's cut outputs of every member's bottom
// side by side (bottoms[k] on its own columns train[k], test[k], the rows
// of every member in one order).
func (a *Attacker) RunPooled(bottoms []model.Bottom, train, test []*data.Features, testLabels []uint8) (map[string]Result, error) {
	if len(bottoms) == 0 || len(train) != len(bottoms) || len(test) != len(bottoms) {
		return nil, fmt.Errorf("completion: %d bottoms for %d training and %d test feature sets", len(bottoms), len(train), len(test))
	}
	all := make([]int, test[0].Rows)
	for i := range all {
		all[i] = i
	}
	var part tensor.Matrix
	for _, c := range []struct {
		what string
		x    []*data.Features
		rows []int
		dst  *tensor.Matrix
	}{{"known rows", train, a.rows.Known, &a.known}, {"unlabelled rows", train, a.rows.Unlabelled, &a.unl}, {"test rows", test, all, &a.test}} {
		width := 0
		for _, b := range bottoms {
			width += b.CutDim()
		}
		c.dst.Resize(len(c.rows), width)
		lo := 0
		for k, b := range bottoms {
			if c.x[k].Rows != c.x[0].Rows {
				return nil, fmt.Errorf("completion: colluding party %d has %d rows, party 1 %d", k+1, c.x[k].Rows, c.x[0].Rows)
			}
			if err := Embed(b, c.x[k], c.rows, a.chunk, &a.batch, &part); err != nil {
				return nil, fmt.Errorf("completion: %s of colluding party %d: %w", c.what, k+1, err)
			}
			d := b.CutDim()
			for i := range len(c.rows) {
				copy(c.dst.Data[i*width+lo:i*width+lo+d], part.Data[i*d:(i+1)*d])
			}
			lo += d
		}
	}
	a.testDone = false
	return a.complete(testLabels)
}

// complete runs the attacks on the cut outputs in a.known, a.unl and
// a.test and scores them against testLabels (nil: no figures).
func (a *Attacker) complete(testLabels []uint8) (map[string]Result, error) {
	in := &attack.CompletionInput{Known: &a.known, Labels: a.rows.KnownLabels, Unlabelled: &a.unl, Target: &a.test, Seed: a.seed}
	out := make(map[string]Result, len(a.attacks))
	for k, m := range a.attacks {
		s, err := m.Complete(in, a.scores[a.names[k]])
		if err != nil {
			return nil, err
		}
		a.scores[a.names[k]] = s
		if testLabels == nil {
			continue
		}
		res, err := Score(s, testLabels)
		if err != nil {
			return nil, fmt.Errorf("completion: attack %s: %w", a.names[k], err)
		}
		res.Prior = prior(m)
		out[a.names[k]] = res
	}
	return out, nil
}

// prior returns the attack's estimated positive share when it reports
// one.
func prior(m attack.ModelAttack) float64 {
	if tm, ok := m.(*attack.TunedModel); ok {
		m = tm.Chosen()
	}
	if c, ok := m.(*attack.Completion); ok {
		return c.Prior
	}
	return 0
}

// Score measures probabilities against the true labels: exact AUC and the
// accuracy of the decision p ≥ ½.
func Score(p []float64, labels []uint8) (Result, error) {
	if len(p) != len(labels) {
		return Result{}, fmt.Errorf("%d scores for %d labels", len(p), len(labels))
	}
	auc, ok := metrics.AUC(p, labels, nil)
	if !ok {
		return Result{}, fmt.Errorf("the %d test labels hold one class; the AUC is undefined", len(labels))
	}
	right := 0
	for i, v := range p {
		if (v >= 0.5) == (labels[i] == 1) {
			right++
		}
	}
	return Result{AUC: auc, Accuracy: float64(right) / float64(len(p))}, nil
}

// Flatten turns results into "ATTACK/auc", "ATTACK/accuracy" and
// "ATTACK/prior" entries of dst (allocated when nil), for eval.jsonl.
func Flatten(res map[string]Result, dst map[string]float64) map[string]float64 {
	if dst == nil {
		dst = make(map[string]float64, 3*len(res))
	}
	for n, r := range res {
		dst[n+"/auc"] = r.AUC
		dst[n+"/accuracy"] = r.Accuracy
		dst[n+"/prior"] = r.Prior
	}
	return dst
}

// Embed writes into dst the cut output of the given rows of x, computed
// with bottom in passes of at most chunk rows (batch is scratch).
func Embed(bottom model.Bottom, x *data.Features, rows []int, chunk int, batch *data.Batch, dst *tensor.Matrix) error {
	d := bottom.CutDim()
	dst.Resize(len(rows), d)
	for start := 0; start < len(rows); start += chunk {
		end := min(start+chunk, len(rows))
		x.Gather(rows[start:end], batch)
		e, err := bottom.Forward(batch)
		if err != nil {
			return err
		}
		if e.Rows != end-start || e.Cols != d {
			return fmt.Errorf("bottom gave a %d×%d cut output for %d rows of width %d", e.Rows, e.Cols, end-start, d)
		}
		if err := tensor.CheckFinite("cut output", e); err != nil {
			return err
		}
		copy(dst.Data[start*d:end*d], e.Data)
	}
	return nil
}
