package integrity

import "github.com/splitguard/splitguard/tensor"

func init() {
	RegisterTamper(TamperSpec{Name: "constant",
		Help: "one fixed vector for every row: the column means of the first embedding it replaces",
		New:  func(uint64) Tamper { return &constant{} }})
}

// constant sends the same vector in every row of every message: the
// per-column mean of the first honest embedding it was given.
type constant struct {
	v   []float32
	out *tensor.Matrix
}

func (t *constant) Name() string { return "constant" }

func (t *constant) Send(_ int64, e *tensor.Matrix, _ bool) (*tensor.Matrix, error) {
	if len(t.v) != e.Cols {
		sum := make([]float64, e.Cols)
		for i, x := range e.Data[:e.Rows*e.Cols] {
			sum[i%e.Cols] += float64(x)
		}
		t.v = make([]float32, e.Cols)
		for c := range sum {
			t.v[c] = float32(sum[c] / float64(max(e.Rows, 1)))
		}
	}
	t.out = t.out.Resize(e.Rows, e.Cols)
	for r := range e.Rows {
		copy(t.out.Data[r*e.Cols:(r+1)*e.Cols], t.v)
	}
	return t.out, nil
}
