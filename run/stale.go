package run

import (
	"maps"

	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/tensor"
)

// staleViews keeps copies of the active party's views of the batches in
// flight under a pipelined schedule (staleness k > 0): the active party
// trains on batches t, …, t+k before the passive applies the gradient of
// batch t and completes its record, and the active's observation buffers
// are reused from one batch to the next.
type staleViews struct {
	ring []staleView
}

// staleView is one batch's copy, its buffers reused.
type staleView struct {
	ob                    active.Observation
	labels                []uint8
	lossLabels, probs     []float32
	rows                  []int
	emb, clean, protected tensor.Matrix
	set                   bool // ob holds a batch's view
}

func newStaleViews(k int) *staleViews { return &staleViews{ring: make([]staleView, k+1)} }

// keep copies ob into the slot of its step and returns the copy.
func (s *staleViews) keep(ob *active.Observation) *active.Observation {
	v := &s.ring[ob.Step%int64(len(s.ring))]
	v.ob, v.set = *ob, true
	v.labels = append(v.labels[:0], ob.Labels...)
	v.lossLabels = append(v.lossLabels[:0], ob.LossLabels...)
	v.probs = append(v.probs[:0], ob.Probs...)
	v.rows = append(v.rows[:0], ob.Rows...)
	v.ob.Labels, v.ob.LossLabels, v.ob.Probs, v.ob.Rows = v.labels, v.lossLabels, v.probs, v.rows
	v.ob.Stats = maps.Clone(ob.Stats)
	v.ob.Embedding = copyInto(&v.emb, ob.Embedding)
	v.ob.Clean = copyInto(&v.clean, ob.Clean)
	v.ob.Protected = copyInto(&v.protected, ob.Protected)
	return &v.ob
}

// get returns the copy of step's view, or nil when none is held.
func (s *staleViews) get(step int64) *active.Observation {
	v := &s.ring[step%int64(len(s.ring))]
	if !v.set || v.ob.Step != step {
		return nil
	}
	return &v.ob
}

// copyInto copies m into dst and returns dst, or nil for a nil m.
func copyInto(dst *tensor.Matrix, m *tensor.Matrix) *tensor.Matrix {
	if m == nil {
		return nil
	}
	dst.Resize(m.Rows, m.Cols)
	copy(dst.Data, m.Data)
	return dst
}
