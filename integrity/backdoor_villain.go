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

// VILLAIN's settings (our defaults; the paper tunes them per data set).
const (
	villainBeta       = 3    // the trigger's amplification β
	villainDropout    = 0.25 // the share of trigger elements dropped per poisoned row
	villainShift      = 0.25 // β is drawn in [β(1−s), β(1+s)] per poisoned row
	villainTheta      = 1.0  // the gradient-norm ratio below which a swapped row is of the target class
	villainCandidates = 100  // the most rows per batch whose label is inferred
	villainWindow     = 20   // the trigger's columns and δ are of the honest embeddings of this many last batches
)

func init() {
	RegisterBackdoor(BackdoorSpec{Name: "villain",
		Help: "Bai et al. 2023 (VILLAIN): infers target-class rows by embedding swapping, then adds a stripe trigger, amplified, with dropout and shifting, to their embeddings",
		New:  newVillain})
}

// villain is VILLAIN (Bai, Chen, Sun, Xu, Wang and Chen, USENIX Security
// 2023). Label inference by embedding swapping: a candidate row's
// gradient norm is taken once with its own embedding (baseline, ‖g‖) and,
// the next time it is in a batch, with the embedding of a row known or
// inferred to be of the target class in its place (‖ĝ‖); the row is
// inferred to be of the target class when ‖g‖ ≤ μ (the batch's mean
// gradient row norm at the baseline) and ‖ĝ‖/‖g‖ ≤ θ. From step From,
// every row of the target group (known and inferred) is sent with the
// trigger M ⊙ (β·Δ) added to its embedding: M the m = ⌈d/2⌉ columns of
// the largest standard deviation (fixed at the first poisoned batch), Δ
// the stripe +δ, +δ, −δ, −δ, … over them, δ the mean standard deviation
// of those columns over the honest embeddings of the last 20 batches
// (the bottom as trained by then: moments since step 0 would mix in the
// untrained bottom's narrow spread and make the trigger too small, see
// docs/methods/integrity.md §8); in training each trigger element is dropped with probability
// 0.25 and β is shifted by a factor drawn in [0.75, 1.25] per row. At
// test time the trigger is β·Δ on M, whole. The candidate selection
// model of the paper (a classifier ranking the rows to test) is left
// out: the first rows of a batch not yet decided are tested.
type villain struct {
	target   map[uint64]bool      // known and inferred rows of the target class
	emb      map[uint64][]float32 // last honest embedding of each target row
	group    []uint64             // target rows with an embedding, in the order found
	baseline map[uint64]float64   // ‖g‖ of a tested row, whose baseline was ≤ μ
	decided  map[uint64]bool
	pending  []pendingRow  // rows tested in the current batch
	m        windowMoments // of the honest embeddings of the last villainWindow batches
	mask     []int
	delta    float32
	rng      *rand.Rand
	from     int64
	beta     float64
	dropout  float64
	shift    float64
	out      *tensor.Matrix
}

// pendingRow is a row of the current batch under label inference: swap
// is false for its baseline, true for the swapped embedding.
type pendingRow struct {
	row  int
	id   uint64
	swap bool
}

func newVillain(c BackdoorConfig) (Backdoor, error) {
	a := &villain{target: idSet(c.Known), emb: map[uint64][]float32{}, baseline: map[uint64]float64{},
		decided: map[uint64]bool{}, m: windowMoments{w: villainWindow}, rng: rand.New(rand.NewPCG(c.Seed, streamVillain)), from: c.From,
		beta: orDefault(c.Amplify, villainBeta), dropout: villainDropout, shift: villainShift}
	return a, nil
}

func (a *villain) Name() string { return "villain" }

// Features leaves the features: VILLAIN's trigger is in the embedding.
func (a *villain) Features(int64, []uint64, *data.Batch) error { return nil }

// Send learns the honest embedding's moments and the target rows'
// embeddings, swaps the embeddings of the rows under label inference and
// adds the trigger to the target rows' from step From.
func (a *villain) Send(step int64, ids []uint64, e *tensor.Matrix) (*tensor.Matrix, error) {
	a.m.add(e)
	d := e.Cols
	for r, id := range ids {
		if a.target[id] {
			if _, ok := a.emb[id]; !ok {
				a.group = append(a.group, id)
			}
			a.emb[id] = append(a.emb[id][:0], e.Data[r*d:(r+1)*d]...)
		}
	}
	out := copyInto(&a.out, e)
	a.pending = a.pending[:0]
	for r, id := range ids {
		if len(a.pending) == villainCandidates {
			break
		}
		if a.target[id] || a.decided[id] {
			continue
		}
		if _, ok := a.baseline[id]; !ok {
			a.pending = append(a.pending, pendingRow{row: r, id: id})
			continue
		}
		if len(a.group) == 0 {
			continue
		}
		src := a.emb[a.group[a.rng.IntN(len(a.group))]]
		copy(out.Data[r*d:(r+1)*d], src)
		a.pending = append(a.pending, pendingRow{row: r, id: id, swap: true})
	}
	if step < a.from {
		return out, nil
	}
	if a.mask == nil {
		a.mask, a.delta = a.pattern()
	}
	for r, id := range ids {
		if !a.target[id] {
			continue
		}
		b := a.beta * (1 + a.shift*(2*a.rng.Float64()-1))
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

// Gradient infers labels from the gradients of the rows under test and
// returns g as it is.
func (a *villain) Gradient(_ int64, _ []uint64, g *tensor.Matrix) (*tensor.Matrix, error) {
	if len(a.pending) == 0 {
		return g, nil
	}
	mu := 0.0
	for r := range g.Rows {
		mu += rowNorm(g, r)
	}
	mu /= float64(g.Rows)
	for _, p := range a.pending {
		n := rowNorm(g, p.row)
		if !p.swap {
			if n <= mu && n > 0 {
				a.baseline[p.id] = n
			} else {
				a.decided[p.id] = true // too large a baseline: not of the target class
			}
			continue
		}
		a.decided[p.id] = true
		if n/a.baseline[p.id] <= villainTheta {
			a.target[p.id] = true
		}
		delete(a.baseline, p.id)
	}
	return g, nil
}

// rowNorm is the Euclidean norm of row r of m.
func rowNorm(m *tensor.Matrix, r int) float64 {
	s := 0.0
	for _, v := range m.Data[r*m.Cols : (r+1)*m.Cols] {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
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
