package attack

import (
	"fmt"
	"math"
	"sort"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

// Names of the epoch-memory attacks in leak keys ("memory_norm/cut", …).
const (
	MemoryNormName   = "memory_norm"
	MemoryCosineName = "memory_cosine"
)

// Memory is the epoch-memory attack: the passive party keeps, per example
// ID and layer, the gradients it received in earlier batches and scores
// each example by the running mean m_id = (Σ g_id)/count_id, since noise
// drawn independently every time averages out across epochs. It is
// evaluated (see [Memory.Scores]) at the end of every epoch over all
// examples seen:
//
//   - memory_norm: ‖m_id‖₂;
//   - memory_cosine: cos(m_id, ref), where the reference direction ref is
//     the mean over all batches observed at the layer of the unit-length
//     oracle gradient (the clean gradient of one positive, handed over per
//     batch exactly as for the [Cosine] attack). Averaging unit vectors
//     rather than raw oracles keeps early batches, whose gradients are
//     larger, from dominating the direction. The cosine with a zero
//     vector is 0.
//
// Storage per layer is a map ID→slot plus one []float32 slab of d values
// per slot and a count per slot: 1M IDs at d = 128 take ~512 MiB per
// layer. A Memory must be used from one goroutine.
type Memory struct {
	layers map[string]*memLayer
}

type memLayer struct {
	d     int
	slot  map[uint64]int32
	ids   []uint64  // slot → ID, in first-seen order
	sum   []float32 // slot s holds sum[s*d : (s+1)*d]
	count []uint32
	ref   []float64 // Σ of unit oracles
	nRef  int
}

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{layers: make(map[string]*memLayer)} }

// Observe adds the gradient rows g (one per ID, ids[i] for row i) received
// at layer to the memory. oracle is the clean gradient of one positive of
// the batch at that layer (len g.Cols), or nil when none is available; a
// zero oracle is ignored. An ID appearing twice in a batch is counted
// twice. It returns an error when the lengths disagree, the layer's width
// changed since its first batch, or a value is not finite (nothing is
// added then).
func (m *Memory) Observe(layer string, ids []uint64, g *tensor.Matrix, oracle []float32) error {
	if g == nil {
		return fmt.Errorf("attack memory at layer %q: no gradient", layer)
	}
	if len(ids) != g.Rows {
		return fmt.Errorf("attack memory at layer %q: %d IDs for %d gradient rows", layer, len(ids), g.Rows)
	}
	d := g.Cols
	l := m.layers[layer]
	if l == nil {
		l = &memLayer{d: d, slot: make(map[uint64]int32), ref: make([]float64, d)}
		m.layers[layer] = l
	}
	if l.d != d {
		return fmt.Errorf("attack memory at layer %q: gradient has %d columns, earlier batches had %d", layer, d, l.d)
	}
	if oracle != nil && len(oracle) != d {
		return fmt.Errorf("attack memory at layer %q: oracle has %d values, gradient rows have %d", layer, len(oracle), d)
	}
	if err := checkFinite("memory", layer, "gradient", g); err != nil {
		return err
	}
	if oracle != nil {
		if err := checkFiniteSlice("memory", layer, "oracle", oracle); err != nil {
			return err
		}
		if on := math.Sqrt(dot(oracle, oracle)); on > 0 {
			for j, v := range oracle {
				l.ref[j] += float64(v) / on
			}
			l.nRef++
		}
	}
	for i, id := range ids {
		s, ok := l.slot[id]
		if !ok {
			if len(l.ids) >= math.MaxInt32 {
				return fmt.Errorf("attack memory at layer %q: more than %d IDs", layer, math.MaxInt32)
			}
			s = int32(len(l.ids))
			l.slot[id] = s
			l.ids = append(l.ids, id)
			l.sum = append(l.sum, make([]float32, d)...)
			l.count = append(l.count, 0)
		}
		dst := l.sum[int(s)*d : (int(s)+1)*d]
		for j, v := range g.Row(i) {
			dst[j] += v
		}
		l.count[s]++
	}
	return nil
}

// Layers returns the names of the layers with observations, sorted.
func (m *Memory) Layers() []string {
	names := make([]string, 0, len(m.layers))
	for n := range m.layers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Len returns the number of distinct IDs seen at layer.
func (m *Memory) Len(layer string) int {
	if l := m.layers[layer]; l != nil {
		return len(l.ids)
	}
	return 0
}

// MemoryScores holds the epoch-memory scores of every ID seen at a layer,
// index-aligned. Its slices are reused by the next [Memory.Scores] call
// that is given the same MemoryScores.
type MemoryScores struct {
	// IDs are the example IDs in first-seen order.
	IDs []uint64
	// Norm is memory_norm: the norm of each ID's running mean gradient.
	Norm []float64
	// Cosine is memory_cosine: the cosine of each ID's running mean with
	// the reference direction; nil when no (non-zero) oracle was ever
	// observed at the layer.
	Cosine []float64
}

// Scores writes into dst the memory_norm and memory_cosine scores of
// every ID seen at layer (larger = more likely positive). It returns an
// error when nothing was observed at layer.
func (m *Memory) Scores(layer string, dst *MemoryScores) error {
	l := m.layers[layer]
	if l == nil {
		return fmt.Errorf("attack memory: nothing observed at layer %q", layer)
	}
	n, d := len(l.ids), l.d
	dst.IDs = append(dst.IDs[:0], l.ids...)
	dst.Norm = buf.Grow(dst.Norm, n)
	var rn float64
	if l.nRef > 0 {
		for _, v := range l.ref {
			rn += v * v
		}
		rn = math.Sqrt(rn)
	}
	if rn > 0 {
		dst.Cosine = buf.Grow(dst.Cosine, n)
	} else {
		dst.Cosine = nil
	}
	for s := range n {
		row := l.sum[s*d : (s+1)*d]
		var ss, dr float64
		for j, v := range row {
			ss += float64(v) * float64(v)
			if rn > 0 {
				dr += float64(v) * l.ref[j]
			}
		}
		sn := math.Sqrt(ss)
		dst.Norm[s] = sn / float64(l.count[s])
		if rn > 0 {
			if sn == 0 {
				dst.Cosine[s] = 0
			} else {
				dst.Cosine[s] = dr / (sn * rn)
			}
		}
	}
	return nil
}

// IDs returns the example IDs remembered at layer, in first-seen order
// (the order of [Memory.Scores] and [EpochAttack.ScoreEpoch]); the slice
// is the memory's own and must not be modified.
func (m *Memory) IDs(layer string) []uint64 {
	if l := m.layers[layer]; l != nil {
		return l.ids
	}
	return nil
}
