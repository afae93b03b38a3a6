// Package audit measures label leakage where the labels are: given what
// the passive party received (and, for forward attacks, computed) on one
// batch, it runs every configured attack at every observable layer and
// scores it by its exact leak AUC against the true labels (METHODS §2).
//
// The in-process simulation audits every passive layer; in a networked run
// the active party audits what it sends (the cut layer).
package audit

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// streamAudit is the PCG stream of the auditor's choices (oracle example,
// hints).
const streamAudit = 0xa0d17

// maxHints is the largest k of the hint attacks.
const maxHints = 5

// streamKnown is the PCG stream of the known-label rows of a batch (drawn
// afresh from the seed and step, so that checkpoints need not hold it).
const streamKnown = 0xa0d18

// maxKnownRows is the largest number of known rows the auditor provides.
const maxKnownRows = 64

// LayerName names passive layer i (1-based) of L: "cut" for the last,
// "first" for the first, else the index.
func LayerName(i, L int) string {
	switch i {
	case L:
		return "cut"
	case 1:
		return "first"
	}
	return strconv.Itoa(i)
}

// LayerNames names all L passive layers, first to cut.
func LayerNames(L int) []string {
	names := make([]string, L)
	for i := range names {
		names[i] = LayerName(i+1, L)
	}
	return names
}

// Batch is one training batch as the auditor sees it. Slices indexed by
// layer follow Layers; an entry may be nil where that view is not
// available (e.g. in a networked run the active party sees only the cut).
type Batch struct {
	Step   int64
	Epoch  int
	IDs    []uint64
	Labels []uint8 // true labels
	Layers []string
	// Grads[l]: the gradient the passive holds at layer l, obtained from
	// the protected gradient it received.
	Grads []*tensor.Matrix
	// Outputs[l]: layer l's forward output (for embedding attacks).
	Outputs []*tensor.Matrix
	// Clean computes the unprotected gradient at every layer at the same
	// parameters (the cosine attack's oracle). Nil when unavailable.
	Clean func() ([]*tensor.Matrix, error)
}

// Auditor runs the attacks and accumulates their per-batch leak AUCs. It
// gives each attack what the attack declares it needs (attack.Needs): the
// layer's gradient or output, the oracle, hints, the epoch memory.
type Auditor struct {
	grad, embed []attack.Attack
	needOracle  bool
	needOutputs bool
	minority    bool
	seed        uint64
	knownRows   int       // the most known rows any attack declares
	pcg         *rand.PCG // rng's source, saved by MarshalBinary
	rng         *rand.Rand
	leak        *metrics.Leak

	scores      []float64
	scored      []bool
	hints       []int
	perm        []int
	known       []int
	knownLabels []uint8
	result      map[string]*float64

	model []string // model attacks: run at evaluations by package completion

	tuned []*attack.Tuned // the tuned attackers (Tune), also in grad and embed
	// expensiveEvery: the expensive attacks score steps 0, N, 2N, … only
	// (SampleExpensive; 0 or 1: every batch).
	expensiveEvery int
	// onScores, when set (by tests), sees every attack's scores of a batch.
	onScores func(key string, scores []float64, scored []bool)

	memory    *attack.Memory // nil unless an epoch attack is on
	epoch     []attack.EpochAttack
	memScores []float64
	memLabels []uint8
}

// New returns an auditor running the named attacks (attack.Names lists
// them). positivesMinority is the spectral attacker's prior.
func New(names []string, positivesMinority bool, seed uint64) (*Auditor, error) {
	pcg := rand.NewPCG(seed, streamAudit)
	a := &Auditor{minority: positivesMinority, seed: seed, pcg: pcg, rng: rand.New(pcg),
		leak: metrics.NewLeak(), result: map[string]*float64{}}
	for _, n := range names {
		p, err := attack.NewPlugin(n)
		if err != nil {
			return nil, err
		}
		needs := p.Needs()
		a.needOracle = a.needOracle || needs.Oracle
		a.needOutputs = a.needOutputs || !needs.Model && (needs.Input == attack.Embedding || needs.WithOutput)
		if needs.Hints > maxHints {
			return nil, fmt.Errorf("attack %s needs %d hints; the auditor provides at most %d", n, needs.Hints, maxHints)
		}
		if needs.KnownRows > maxKnownRows {
			return nil, fmt.Errorf("attack %s needs %d known rows; the auditor provides at most %d", n, needs.KnownRows, maxKnownRows)
		}
		a.knownRows = max(a.knownRows, needs.KnownRows)
		switch at := p.(type) {
		case attack.EpochAttack:
			if a.memory == nil {
				a.memory = attack.NewMemory()
			}
			a.epoch = append(a.epoch, at)
		case attack.ModelAttack:
			// Run on the trained bottom at each evaluation (package
			// completion), not per batch.
			a.model = append(a.model, n)
		case attack.Attack:
			if needs.Input == attack.Embedding {
				a.embed = append(a.embed, at)
			} else {
				a.grad = append(a.grad, at)
			}
		default:
			return nil, fmt.Errorf("attack %s is neither a per-batch nor an epoch attack", n)
		}
	}
	return a, nil
}

// ModelAttacks names the configured model attacks (attack.ModelAttack),
// which the auditor does not run: they attack the trained bottom at each
// evaluation (package completion).
func (a *Auditor) ModelAttacks() []string { return a.model }

// NeedsOutputs reports whether an attack of the auditor reads the layers'
// forward outputs (an embedding attack, or a gradient attack with
// attack.Needs.WithOutput): without one, Observe reads Batch.Grads only.
func (a *Auditor) NeedsOutputs() bool { return a.needOutputs }

// NeedsOracle reports whether an attack of the auditor reads the oracle,
// so Observe calls Batch.Clean (for a batch with a positive).
func (a *Auditor) NeedsOracle() bool { return a.needOracle }

// HasEpochMemory reports whether an attack of the auditor remembers every
// example across the epoch (its state is not checkpointed).
func (a *Auditor) HasEpochMemory() bool { return a.memory != nil }

// Observe audits one batch and returns its leak AUCs keyed "ATTACK/LAYER"
// (nil where the AUC is undefined: a batch of one class). The map is
// reused by the next call.
func (a *Auditor) Observe(b *Batch) (map[string]*float64, error) {
	clear(a.result)
	n := len(b.Labels)
	a.scores = buf.Grow(a.scores, n)
	a.scored = buf.Grow(a.scored, n)
	a.hints = attack.PickHints(b.Labels, maxHints, a.rng, a.hints)
	oracleRow := pickPositive(b.Labels, a.rng)
	var clean []*tensor.Matrix
	if a.needOracle && oracleRow >= 0 && b.Clean != nil {
		var err error
		if clean, err = b.Clean(); err != nil {
			return nil, fmt.Errorf("step %d: clean gradients: %w", b.Step, err)
		}
	}
	if a.knownRows > 0 {
		a.pickKnown(b)
	}
	for l, layer := range b.Layers {
		ob := &attack.Observation{Layer: layer, Hints: a.hints, PositivesMinority: a.minority,
			Known: a.known, KnownLabels: a.knownLabels}
		if l < len(b.Grads) && b.Grads[l] != nil {
			ob.X = b.Grads[l]
			ob.Oracle = nil
			if l < len(b.Outputs) {
				ob.Output = b.Outputs[l]
			}
			if clean != nil && clean[l] != nil {
				ob.Oracle = clean[l].Row(oracleRow)
			}
			if a.memory != nil && memoryLayers[layer] {
				if err := a.memory.Observe(layer, b.IDs, ob.X, ob.Oracle); err != nil {
					return nil, fmt.Errorf("step %d: %w", b.Step, err)
				}
			}
			for _, at := range a.grad {
				if a.skips(at.Needs().Expensive, b.Step) {
					continue
				}
				if at.Needs().Oracle && ob.Oracle == nil {
					// No positive in the batch: no oracle, and no AUC either.
					a.leak.Add(at.Name(), layer, 0, 0, 0, false)
					a.result[metrics.Key(at.Name(), layer)] = nil
					continue
				}
				if err := a.run(at, ob, b, layer); err != nil {
					return nil, err
				}
			}
		}
		if l < len(b.Outputs) && b.Outputs[l] != nil {
			ob.X = b.Outputs[l]
			ob.Output = nil
			for _, at := range a.embed {
				if err := a.run(at, ob, b, layer); err != nil {
					return nil, err
				}
			}
		}
	}
	return a.result, nil
}

func (a *Auditor) run(at attack.Attack, ob *attack.Observation, b *Batch, layer string) error {
	if a.skips(at.Needs().Expensive, b.Step) {
		return nil
	}
	for i := range a.scored {
		a.scored[i] = true
	}
	if err := at.Score(ob, a.scores, a.scored); err != nil {
		return fmt.Errorf("step %d: %w", b.Step, err)
	}
	key := metrics.Key(at.Name(), layer)
	if a.onScores != nil {
		a.onScores(key, a.scores, a.scored)
	}
	auc, ok := a.leak.Observe(at.Name(), layer, a.scores, b.Labels, a.scored)
	if ok {
		v := auc
		a.result[key] = &v
	} else {
		a.result[key] = nil
	}
	return nil
}

// Summary returns the per-key summaries over every batch audited so far.
func (a *Auditor) Summary() map[string]metrics.LeakSummary { return a.leak.Summaries() }

// Leak gives access to the accumulated per-batch series.
func (a *Auditor) Leak() *metrics.Leak { return a.leak }

// pickKnown draws the batch's known-label rows: min(knownRows, B)
// distinct rows, uniformly, from a generator seeded by the auditor's seed
// and the step.
func (a *Auditor) pickKnown(b *Batch) {
	n := len(b.Labels)
	k := min(a.knownRows, n)
	r := rand.New(rand.NewPCG(a.seed^(uint64(b.Step)*0x9e3779b97f4a7c15), streamKnown))
	a.perm = buf.Grow(a.perm, n)
	for i := range a.perm {
		a.perm[i] = i
	}
	for i := range k {
		j := i + r.IntN(n-i)
		a.perm[i], a.perm[j] = a.perm[j], a.perm[i]
	}
	a.known = append(a.known[:0], a.perm[:k]...)
	a.knownLabels = a.knownLabels[:0]
	for _, i := range a.known {
		a.knownLabels = append(a.knownLabels, b.Labels[i])
	}
}

// pickPositive returns a uniformly chosen positive row, or -1.
func pickPositive(labels []uint8, r *rand.Rand) int {
	pos := 0
	for _, y := range labels {
		pos += int(y)
	}
	if pos == 0 {
		return -1
	}
	k := r.IntN(pos)
	for i, y := range labels {
		if y == 1 {
			if k == 0 {
				return i
			}
			k--
		}
	}
	return -1
}
