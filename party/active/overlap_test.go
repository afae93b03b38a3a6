package active_test

import (
	"errors"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
)

// linearBottom is e = x·w for one dense column and a 1-wide cut, trained
// by plain gradient descent: its parameter gradient Σ x_i g_i does not
// depend on w, so a recomputed forward changes nothing.
type linearBottom struct {
	w, lr, grad float64
	x           []float32
	out         tensor.Matrix
}

func (b *linearBottom) Forward(in *data.Batch) (*tensor.Matrix, error) {
	b.x = append(b.x[:0], in.Dense.Data...)
	b.out.Resize(in.Rows, 1)
	for i, x := range b.x {
		b.out.Data[i] = float32(float64(x) * b.w)
	}
	return &b.out, nil
}
func (b *linearBottom) Outputs() []*tensor.Matrix { return []*tensor.Matrix{&b.out} }
func (b *linearBottom) Backward(g *tensor.Matrix) ([]*tensor.Matrix, error) {
	b.grad = 0
	for i, x := range b.x {
		b.grad += float64(x) * float64(g.Data[i])
	}
	return []*tensor.Matrix{g}, nil
}
func (b *linearBottom) Backprop(g *tensor.Matrix) ([]*tensor.Matrix, error) {
	return []*tensor.Matrix{g}, nil
}
func (b *linearBottom) Step() error          { b.w -= b.lr * b.grad; return nil }
func (b *linearBottom) CutDim() int          { return 1 }
func (b *linearBottom) Save(io.Writer) error { return errors.New("not saved") }
func (b *linearBottom) Load(io.Reader) error { return errors.New("not loaded") }
func (t *linearTop) Save(io.Writer) error    { return errors.New("not saved") }
func (t *linearTop) Load(io.Reader) error    { return errors.New("not loaded") }
func (t *linearTop) Step() error             { t.v -= t.lr * t.grad; return nil }
func (t *linearTop) Backward(d []float32) (*tensor.Matrix, error) {
	t.grad = 0
	t.ge.Resize(len(d), 1)
	for i, dl := range d {
		t.grad += float64(dl) * float64(t.e[i])
		t.ge.Data[i] = float32(float64(dl) * t.v)
	}
	return &t.ge, nil
}

// linearTop is logit = v·e, trained by plain gradient descent.
type linearTop struct {
	v, lr, grad float64
	e           []float32
	logits      []float32
	ge          tensor.Matrix
}

func (t *linearTop) Forward(e *tensor.Matrix, _ *data.Batch) ([]float32, error) {
	t.e = append(t.e[:0], e.Data...)
	t.logits = t.logits[:0]
	for _, x := range e.Data {
		t.logits = append(t.logits, float32(float64(x)*t.v))
	}
	return t.logits, nil
}

// expectedOverlap is the schedule of docs/methods/wan.md computed in
// float64 from its definition: batch s is sent with the bottom updated by
// the batches before max(s−k, 0); the top trains on each batch as it
// arrives with Q updates on the same embedding; each gradient, when
// applied, updates the bottom Q times. It returns the gradient of every
// batch and the final w and v.
func expectedOverlap(x []float64, y []float64, batches [][]int, w, v, lr float64, k, q int) ([][]float64, float64, float64) {
	T := len(batches)
	grads := make([][]float64, T)
	applied := 0
	apply := func(t int) {
		for range q {
			var gw float64
			for i, r := range batches[t] {
				gw += x[r] * grads[t][i]
			}
			w -= lr * gw
		}
	}
	for s := range T {
		for applied < s-k {
			apply(applied)
			applied++
		}
		rows := batches[s]
		e := make([]float64, len(rows))
		for i, r := range rows {
			e[i] = float64(float32(x[r] * w))
		}
		grads[s], v = topSteps(rows, e, y, v, lr, q)
	}
	for applied < T {
		apply(applied)
		applied++
	}
	return grads, w, v
}

// topSteps takes the linear top's Q gradient steps on one batch's
// embedding e (mean logistic loss over the rows, labels y) in float64 and
// returns the gradient of the embedding of the first, the one sent, and
// the new v.
func topSteps(rows []int, e, y []float64, v, lr float64, q int) ([]float64, float64) {
	n := float64(len(rows))
	g := make([]float64, len(rows))
	for u := range q {
		var gv float64
		for i, r := range rows {
			d := (1/(1+math.Exp(-e[i]*v)) - y[r]) / n
			gv += d * e[i]
			if u == 0 {
				g[i] = d * v
			}
		}
		v -= lr * gv
	}
	return g, v
}

// TestOverlapClosedForm runs a linear bottom and top through the
// pipelined schedule and the local updates in one process and compares
// every gradient the passive received and the final parameters with
// expectedOverlap; and checks that the gradient the passive observes for
// each batch (what a passive-side audit reads) is the one the active sent
// for it.
func TestOverlapClosedForm(t *testing.T) {
	x := []float64{0.5, -1.25, 2, 0.75, -0.5, 1.5}
	y := []float64{1, 0, 1, 1, 0, 0}
	const batch, lr, w0, v0 = 2, 0.5, 0.8, -0.6
	sched, err := schedule.New(len(x), batch, 7)
	if err != nil {
		t.Fatal(err)
	}
	order := sched.Order(0, nil)
	var batches [][]int
	for b := range sched.BatchesPerEpoch() {
		batches = append(batches, append([]int(nil), sched.Rows(order, b)...))
	}
	for _, c := range []struct{ k, q int }{{0, 1}, {1, 1}, {2, 1}, {0, 2}, {1, 2}, {2, 3}} {
		wantG, wantW, wantV := expectedOverlap(x, y, batches, w0, v0, lr, c.k, c.q)
		r := runLinear(t, x, y, sched, w0, v0, lr, celuCase{q: c.q, k: c.k, epochs: 1})
		got, observed, sent := r.got, r.observed, r.sent
		// What the passive observes is what the active sent for each
		// batch, bit for bit (the audit's input). Compared once both
		// parties have ended: the two observers run on different
		// goroutines.
		if len(observed) != len(sent) {
			t.Errorf("k=%d Q=%d: the passive observed %d gradients, the active sent %d", c.k, c.q, len(observed), len(sent))
		}
		for s := range min(len(observed), len(sent)) {
			if !slices.Equal(observed[s], sent[s]) {
				t.Errorf("k=%d Q=%d: step %d: the gradient observed is not the one sent", c.k, c.q, s)
			}
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(b)) }
		if len(got) != len(wantG) {
			t.Fatalf("k=%d Q=%d: %d gradients, want %d", c.k, c.q, len(got), len(wantG))
		}
		for s := range wantG {
			for i := range wantG[s] {
				if !near(got[s][i], wantG[s][i]) {
					t.Errorf("k=%d Q=%d: step %d row %d: gradient %v, want %v", c.k, c.q, s, i, got[s][i], wantG[s][i])
				}
			}
		}
		if !near(r.w, wantW) || !near(r.v, wantV) {
			t.Errorf("k=%d Q=%d: w %v v %v, want %v %v", c.k, c.q, r.w, r.v, wantW, wantV)
		}
	}
}
