package integrity

import (
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// The pairings of gradient replacement (BackdoorConfig.Pairing).
const (
	// PairingInBatch pairs each known target row with a poisoned row of
	// its own batch and replaces that row's gradient by the target row's
	// of the same step, as VFLAIR does (the default).
	PairingInBatch = "batch"
	// PairingFixed pairs each known target row, when first seen, with a
	// poisoned row for the whole run; a poisoned row gets the last
	// gradient kept of its target row (or of any, when none was paired
	// with it), possibly from an earlier step.
	PairingFixed = "fixed"
)

// rowPair is a known target row and the poisoned row it is paired with
// in the same batch, by their places in the batch.
type rowPair struct{ target, poisoned int }

// featuresInBatch is Features under VFLAIR's pairing: within the batch,
// each known target row is paired with a different poisoned row of the
// same batch (drawn at random); the poisoned row carries the trigger and
// the target row the poisoned row's triggered features. A poisoned row
// no known row of its batch is paired with stays honest in that batch
// (in VFLAIR a poisoned row is never trained without its target copy
// beside it); a known row without a poisoned row in its batch sends a
// poisoned row's triggered features drawn from the whole pool (as
// VFLAIR's appended target row always carries one).
func (a *gradientReplacement) featuresInBatch(ids []uint64, b *data.Batch) {
	a.pairs, a.targets, a.candidates = a.pairs[:0], a.targets[:0], a.candidates[:0]
	for r, id := range ids {
		switch {
		case a.known[id]:
			a.targets = append(a.targets, r)
		case a.poisoned[id]:
			a.candidates = append(a.candidates, r)
		}
	}
	a.rng.Shuffle(len(a.candidates), func(i, j int) {
		a.candidates[i], a.candidates[j] = a.candidates[j], a.candidates[i]
	})
	for i, rt := range a.targets {
		if i < len(a.candidates) {
			rj := a.candidates[i]
			copyRow(b, rt, a.train, a.rowOf[ids[rj]])
			a.trigger.apply(b, rt)
			a.trigger.apply(b, rj)
			a.pairs = append(a.pairs, rowPair{target: rt, poisoned: rj})
			continue
		}
		j := a.pool[a.rng.IntN(len(a.pool))]
		copyRow(b, rt, a.train, a.rowOf[j])
		a.trigger.apply(b, rt)
	}
}

// gradientInBatch is Gradient under VFLAIR's pairing: each poisoned row
// paired in this batch gets γ times its target row's gradient of this
// batch; every other row keeps its own.
func (a *gradientReplacement) gradientInBatch(g *tensor.Matrix) *tensor.Matrix {
	out := copyInto(&a.out, g)
	d := g.Cols
	for _, p := range a.pairs {
		src := g.Data[p.target*d : (p.target+1)*d]
		dst := out.Data[p.poisoned*d : (p.poisoned+1)*d]
		for c := range dst {
			dst[c] = a.gamma * src[c]
		}
	}
	return out
}
