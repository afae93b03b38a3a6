package integrity

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// streamVillain is the PCG stream of VILLAIN's draws.
const streamVillain = 0x7111a1

// VILLAIN's settings. β and the shifting range are the defaults of the
// authors' group's implementation (SecretFlow's VillainAttack: β 0.4,
// the trigger scaled by a factor drawn in [0.6, 1.2]), the 1% poison
// budget the paper's as a replication citing it gives it; the dropout
// ratio, the trigger size and the candidates per batch are ours (see
// docs/methods/integrity.md §8 and §10d).
const (
	villainBeta       = 0.4  // the trigger's magnitude β (× δ)
	villainDropout    = 0.25 // the share of trigger elements dropped per poisoned row
	villainShiftLow   = 0.6  // a poisoned row's trigger is scaled by a factor in [low, high]
	villainShiftHigh  = 1.2  //
	villainPoison     = 0.01 // the share of training rows poisoned (the first target rows found)
	villainCandidates = 100  // the most rows per batch whose label is inferred (the paper's 14 fills the budget too late in a 3–5 epoch run: integrity.md §10d)
	villainWindow     = 20   // the trigger's columns and δ are of the honest embeddings of this many last batches
)

func init() {
	RegisterBackdoor(BackdoorSpec{Name: "villain",
		Help: "Bai et al. 2023 (VILLAIN): infers target-class rows by embedding swapping, then adds a stripe trigger β·δ, with dropout and shifting, to the embeddings of a budget of them",
		New:  newVillain})
}

// villain is VILLAIN (Bai, Chen, Sun, Xu, Wang and Chen, USENIX Security
// 2023).
//
// Label inference by embedding swapping: in a batch holding a row r of
// the target group (known or inferred) whose embedding is sent honest,
// up to villainCandidates undecided rows are sent with r's embedding in
// their place. For a single-logit model the gradient at the cut of a
// row is (p − y)·∂z/∂e, and the swapped rows and r share e, hence
// ∂z/∂e when the top's deep part reads the cut embedding alone: a
// swapped row's gradient is a positive multiple of r's when its label is
// r's (p − y of one sign for every row of a class), a negative one
// otherwise. A candidate joins the target group when its gradient's dot
// product with r's is positive and leaves the candidates when it is
// negative (zero: tried again); r is sent without the trigger in that
// batch. Inference ends once the group fills the poison budget. The paper compares gradient norms
// instead (‖ĝ‖/‖g‖ ≤ θ with ‖g‖ ≤ μ, g taken in an earlier batch); on a
// binary table that test is near chance, see
// docs/methods/integrity.md §10b.
//
// Poisoning: from step From, each of the first ⌈Poison·n⌉ rows of the
// target group (the known rows first; n the training rows) is sent with
// the trigger M ⊙ (β·Δ) added to its embedding: M the m = ⌈d/2⌉ columns
// of the largest standard deviation over the honest embeddings of the
// last 20 batches (fixed at the first poisoned batch), Δ the stripe +δ,
// +δ, −δ, −δ, … over them, δ their mean standard deviation; in training
// each trigger element is dropped with probability 0.25 and the trigger
// is scaled by a factor drawn in [0.6, 1.2] per row (backdoor
// augmentation). At test time the trigger β·Δ on M is added whole.
type villain struct {
	target  map[uint64]bool // known and inferred rows of the target class
	poison  map[uint64]bool // the rows poisoned: the first budget rows of the group
	budget  int
	group   []uint64 // the target group, in the order found
	decided map[uint64]bool
	ref     int   // the batch row whose embedding the candidates carry (−1: none)
	pending []int // the batch rows of the candidates
	refs    []int
	m       windowMoments
	mask    []int
	delta   float32
	rng     *rand.Rand
	from    int64
	beta    float64
	dropout float64
	low     float64
	high    float64
	out     *tensor.Matrix
}

func newVillain(c BackdoorConfig) (Backdoor, error) {
	share := orDefault(c.Poison, villainPoison) // checked by NewBackdoor
	a := &villain{target: map[uint64]bool{}, poison: map[uint64]bool{}, decided: map[uint64]bool{},
		budget: int(math.Ceil(share * float64(len(c.TrainIDs)))), ref: -1,
		m: windowMoments{w: villainWindow}, rng: rand.New(rand.NewPCG(c.Seed, streamVillain)), from: c.From,
		beta: orDefault(c.Amplify, villainBeta), dropout: villainDropout, low: villainShiftLow, high: villainShiftHigh}
	a.budget = max(a.budget, len(c.Known))
	for _, id := range c.Known {
		a.join(id)
	}
	return a, nil
}

// join puts row id in the target group, and among the poisoned rows while
// the budget lasts.
func (a *villain) join(id uint64) {
	if a.target[id] {
		return
	}
	a.target[id] = true
	a.group = append(a.group, id)
	if len(a.poison) < a.budget {
		a.poison[id] = true
	}
}

func (a *villain) Name() string { return "villain" }

// Features leaves the features: VILLAIN's trigger is in the embedding.
func (a *villain) Features(int64, []uint64, *data.Batch) error { return nil }

// Send learns the honest embedding's moments, swaps a target row's
// embedding into the rows under label inference and, from step From,
// adds the trigger to the poisoned rows'.
func (a *villain) Send(step int64, ids []uint64, e *tensor.Matrix) (*tensor.Matrix, error) {
	a.m.add(e)
	d := e.Cols
	out := copyInto(&a.out, e)
	poisoning := step >= a.from
	a.pending, a.ref = a.pending[:0], -1
	a.refs = a.refs[:0]
	if len(a.group) < a.budget { // inference ends once the budget is found
		for r, id := range ids {
			if a.target[id] {
				a.refs = append(a.refs, r)
			}
		}
	}
	if refs := a.refs; len(refs) > 0 {
		a.ref = refs[a.rng.IntN(len(refs))]
		src := e.Data[a.ref*d : (a.ref+1)*d]
		for r, id := range ids {
			if len(a.pending) == villainCandidates {
				break
			}
			if a.target[id] || a.decided[id] {
				continue
			}
			copy(out.Data[r*d:(r+1)*d], src)
			a.pending = append(a.pending, r)
		}
	}
	if !poisoning {
		return out, nil
	}
	if a.mask == nil {
		a.mask, a.delta = a.pattern()
	}
	for r, id := range ids {
		if !a.poison[id] || r == a.ref {
			continue
		}
		b := a.beta * (a.low + (a.high-a.low)*a.rng.Float64())
		row := out.Data[r*d : (r+1)*d]
		for k, c := range a.mask {
			if a.rng.Float64() < a.dropout {
				continue
			}
			row[c] += float32(b) * stripe(k, a.delta)
		}
	}
	return out, nil
}

// stripe is element k of the stripe pattern Δ: +δ, +δ, −δ, −δ, ….
func stripe(k int, delta float32) float32 {
	if (k/2)%2 == 1 {
		return -delta
	}
	return delta
}

// pattern picks the trigger's columns (the ⌈d/2⌉ of the largest
// standard deviation, ties by index, in column order) and δ (their mean
// standard deviation).
func (a *villain) pattern() ([]int, float32) {
	d := a.m.cols
	sd := make([]float64, d)
	for c := range sd {
		sd[c] = a.m.sd(c)
	}
	cols := make([]int, d)
	for c := range cols {
		cols[c] = c
	}
	sort.SliceStable(cols, func(i, j int) bool { return sd[cols[i]] > sd[cols[j]] })
	m := (d + 1) / 2
	mask := append([]int(nil), cols[:m]...)
	sort.Ints(mask)
	s := 0.0
	for _, c := range mask {
		s += sd[c]
	}
	return mask, float32(s / float64(m))
}

// Gradient infers the candidates' labels from the direction of their
// gradients against the reference row's, and returns g as it is.
func (a *villain) Gradient(_ int64, ids []uint64, g *tensor.Matrix) (*tensor.Matrix, error) {
	if a.ref < 0 || len(a.pending) == 0 {
		return g, nil
	}
	d := g.Cols
	ref := g.Data[a.ref*d : (a.ref+1)*d]
	for _, r := range a.pending {
		dot := 0.0
		for k, v := range g.Data[r*d : (r+1)*d] {
			dot += float64(v) * float64(ref[k])
		}
		switch {
		case dot > 0:
			a.decided[ids[r]] = true
			a.join(ids[r])
		case dot < 0:
			a.decided[ids[r]] = true
		}
	}
	a.pending, a.ref = a.pending[:0], -1
	return g, nil
}

// TriggerFeatures leaves the features: the trigger is in the embedding.
func (a *villain) TriggerFeatures(*data.Batch) {}

// TriggerEmbedding adds β·Δ on the trigger's columns to every row of e
// (the pattern is picked now if no batch was poisoned yet).
func (a *villain) TriggerEmbedding(e *tensor.Matrix) {
	if a.mask == nil {
		if a.m.cols != e.Cols || a.m.filled == 0 {
			return
		}
		a.mask, a.delta = a.pattern()
	}
	for r := range e.Rows {
		row := e.Data[r*e.Cols : (r+1)*e.Cols]
		for k, c := range a.mask {
			row[c] += float32(a.beta) * stripe(k, a.delta)
		}
	}
}

// Inferred reports the rows VILLAIN holds to be of the target class
// (known and inferred), sorted.
func (a *villain) Inferred() []uint64 {
	out := make([]uint64, 0, len(a.target))
	for id := range a.target {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// rowNorm is the Euclidean norm of row r of m.
func rowNorm(m *tensor.Matrix, r int) float64 {
	s := 0.0
	for _, v := range m.Data[r*m.Cols : (r+1)*m.Cols] {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}
