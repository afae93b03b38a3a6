package integrity

import "github.com/splitguard/splitguard/tensor"

func init() {
	RegisterTamper(TamperSpec{Name: "replay",
		Help: "re-sends the embedding of an earlier training batch (the first of each size it replaces, sent honestly once)",
		New:  func(uint64) Tamper { return &replay{stored: map[int]*tensor.Matrix{}} }})
}

// replay keeps the first training embedding of each batch size it is
// given (sent honestly) and re-sends it in place of every later training
// batch of that size; an evaluation message gets the stored rows in turn.
type replay struct {
	stored map[int]*tensor.Matrix
	first  *tensor.Matrix // the first stored batch, for evaluations
	out    *tensor.Matrix
}

func (t *replay) Name() string { return "replay" }

func (t *replay) Send(_ int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	if !train {
		if t.first == nil {
			return e, nil
		}
		t.out = t.out.Resize(e.Rows, e.Cols)
		d := e.Cols
		for r := range e.Rows {
			s := r % t.first.Rows
			copy(t.out.Data[r*d:(r+1)*d], t.first.Data[s*d:(s+1)*d])
		}
		return t.out, nil
	}
	if m, ok := t.stored[e.Rows]; ok {
		return m, nil
	}
	m := clone(nil, e)
	t.stored[e.Rows] = m
	if t.first == nil {
		t.first = m
	}
	return e, nil
}
