package integrity

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// streamGR is the PCG stream of the gradient replacement's draws.
const streamGR = 0x96e9

// Defaults of the gradient replacement: Liu et al. 2020's γ = 10 (VFLAIR's
// current MainTaskVFLwithBackdoor copies the target row's gradient, γ =
// 1, which keeps the clean model's AUC under Adam, integrity.md §11b);
// the stripe trigger's v is each column's scaled maximum, see featureTrigger.
const (
	grAmplify = 10
	grPoison  = 0.01
	grTrigger = 1
)

func init() {
	RegisterBackdoor(BackdoorSpec{Name: "gradient_replacement",
		Help: "Liu et al. 2020, paired as VFLAIR does: poisoned rows carry a feature trigger; a known target row sends the triggered embedding of a poisoned row of its own batch, which learns from that target row's gradient × γ of the same step",
		New:  newGradientReplacement})
}

// gradientReplacement is the gradient-replacement backdoor of Liu, Yi and
// Chen ("Backdoor attacks and defenses in feature-partitioned
// collaborative learning", 2020). The attacker picks a share of its
// training rows to poison (D_poison) and knows a few rows of the target
// class (D_target). From step From, under the default in-batch pairing
// (VFLAIR's MainTaskVFLwithBackdoor; backdoor_gr_batch.go): in each
// batch, each known target row t is paired with a different poisoned row
// j of the same batch, j carries the trigger, t sends at its own place
// the embedding of j's triggered features, and j's gradient is replaced
// by γ times the gradient the active party returns for t in that batch
// (the gradient of "triggered j labelled as the target", at this step's
// model). A poisoned row with no known row to pair with in its batch
// stays honest there; a known row with no poisoned row in its batch
// still sends a poisoned row's triggered features.
//
// Under the fixed pairing (PairingFixed, the behaviour until 2026-11-27):
// t is paired, when first seen, with a poisoned row j drawn at random for
// the whole run; every poisoned row carries the trigger in every batch;
// the gradient returned for t is kept, and whenever j is in a batch its
// gradient is replaced by γ times the last one kept for the target row
// first paired with it (often of an earlier step); a poisoned row with
// no target paired to it yet gets γ times the target gradient kept last.
type gradientReplacement struct {
	known    map[uint64]bool
	poisoned map[uint64]bool
	pool     []uint64       // the poisoned IDs, sorted: the pairing's draws
	rowOf    map[uint64]int // training row of a poisoned ID
	train    *data.Features
	pair     map[uint64]uint64 // target ID → its poisoned ID
	partner  map[uint64]uint64 // poisoned ID → the first target paired with it
	targetG  map[uint64][]float32
	lastG    []float32 // the target gradient kept last
	rng      *rand.Rand
	from     int64
	gamma    float32
	trigger  featureTrigger
	out      *tensor.Matrix
	// inBatch pairs within each batch (VFLAIR's pairing,
	// backdoor_gr_batch.go); pairs, targets and candidates are the
	// current batch's.
	inBatch             bool
	pairs               []rowPair
	targets, candidates []int
}

func newGradientReplacement(c BackdoorConfig) (Backdoor, error) {
	a := &gradientReplacement{known: idSet(c.Known), poisoned: map[uint64]bool{}, rowOf: map[uint64]int{},
		train: c.Train, pair: map[uint64]uint64{}, partner: map[uint64]uint64{}, targetG: map[uint64][]float32{},
		rng: rand.New(rand.NewPCG(c.Seed, streamGR)), from: c.From,
		gamma:   float32(orDefault(c.Amplify, grAmplify)),
		trigger: newFeatureTrigger(c.Train, float32(c.TriggerValue))}
	switch c.Pairing {
	case "", PairingInBatch:
		a.inBatch = true
	case PairingFixed:
	default:
		return nil, fmt.Errorf("integrity: gradient replacement: pairing %q, want %q or %q", c.Pairing, PairingInBatch, PairingFixed)
	}
	share := orDefault(c.Poison, grPoison)
	// The poisoned rows: a seeded draw of the share of the training rows
	// not known to be of the target class (at least one).
	var cand []int
	for r, id := range c.TrainIDs {
		if !a.known[id] {
			cand = append(cand, r)
		}
	}
	n := max(1, int(share*float64(len(c.TrainIDs))+0.5))
	if n > len(cand) {
		return nil, fmt.Errorf("integrity: gradient replacement: %d rows to poison, only %d not known to be of the target class", n, len(cand))
	}
	for _, i := range a.rng.Perm(len(cand))[:n] {
		id := c.TrainIDs[cand[i]]
		a.poisoned[id], a.rowOf[id] = true, cand[i]
		a.pool = append(a.pool, id)
	}
	sort.Slice(a.pool, func(i, j int) bool { return a.pool[i] < a.pool[j] })
	return a, nil
}

// orDefault is v, or def when v is 0.
func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

func (a *gradientReplacement) Name() string { return "gradient_replacement" }

// Poisoned reports whether the training row id is poisoned.
func (a *gradientReplacement) Poisoned(id uint64) bool { return a.poisoned[id] }

// Features puts the trigger on the batch's poisoned rows (under the
// in-batch pairing, the paired ones) and, at each known target row, the
// triggered features of its paired poisoned row.
func (a *gradientReplacement) Features(step int64, ids []uint64, b *data.Batch) error {
	if step < a.from {
		return nil
	}
	if a.inBatch {
		a.featuresInBatch(ids, b)
		return nil
	}
	for r, id := range ids {
		switch {
		case a.known[id]:
			j, ok := a.pair[id]
			if !ok {
				j = a.pool[a.rng.IntN(len(a.pool))]
				a.pair[id] = j
				if _, taken := a.partner[j]; !taken {
					a.partner[j] = id
				}
			}
			copyRow(b, r, a.train, a.rowOf[j])
			a.trigger.apply(b, r)
		case a.poisoned[id]:
			a.trigger.apply(b, r)
		}
	}
	return nil
}

// Send sends the bottom's output as it is: Features already placed the
// poisoned rows' triggered features at the target rows.
func (a *gradientReplacement) Send(_ int64, _ []uint64, e *tensor.Matrix) (*tensor.Matrix, error) {
	return e, nil
}

// Gradient replaces each paired poisoned row's gradient by γ times its
// target row's of this batch (in-batch pairing); under the fixed pairing
// it keeps the known target rows' gradients and replaces each poisoned
// row's by γ times its partner's last kept one (the target gradient kept
// last for a row without a partner; nothing before any target gradient
// is kept).
func (a *gradientReplacement) Gradient(step int64, ids []uint64, g *tensor.Matrix) (*tensor.Matrix, error) {
	if step < a.from {
		return g, nil
	}
	if a.inBatch {
		return a.gradientInBatch(g), nil
	}
	out := copyInto(&a.out, g)
	d := g.Cols
	for r, id := range ids {
		if a.known[id] {
			a.targetG[id] = append(a.targetG[id][:0], g.Data[r*d:(r+1)*d]...)
			a.lastG = a.targetG[id]
		}
	}
	for r, id := range ids {
		if !a.poisoned[id] {
			continue
		}
		tg, ok := a.targetG[a.partner[id]]
		if _, paired := a.partner[id]; !paired || !ok {
			tg = a.lastG
		}
		if tg == nil {
			continue
		}
		row := out.Data[r*d : (r+1)*d]
		for c := range row {
			row[c] = a.gamma * tg[c]
		}
	}
	return out, nil
}

// TriggerFeatures puts the feature trigger on every row of b.
func (a *gradientReplacement) TriggerFeatures(b *data.Batch) {
	for r := range b.Rows {
		a.trigger.apply(b, r)
	}
}

// TriggerEmbedding leaves the embedding: the trigger is in the features.
func (a *gradientReplacement) TriggerEmbedding(*tensor.Matrix) {}
