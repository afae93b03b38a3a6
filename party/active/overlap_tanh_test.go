package active_test

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
)

// tanhBottom is e = tanh(x·w) for one dense column and a 1-wide cut,
// trained by plain gradient descent. Unlike linearBottom its Jacobian
// x·(1 − e²) depends on w, and Backward reads it from the output of the
// last Forward, as a real layer reads its cached activations: a gradient
// applied without recomputing the forward of its own batch, or through
// the activations of another batch, gives a different update.
type tanhBottom struct {
	w, lr, grad float64
	x           []float32
	out         tensor.Matrix
	// model.Extrapolator: the last Step's change of w, w while moved.
	delta, saved float64
	moved        bool
}

func (b *tanhBottom) Forward(in *data.Batch) (*tensor.Matrix, error) {
	b.x = append(b.x[:0], in.Dense.Data...)
	b.out.Resize(in.Rows, 1)
	for i, x := range b.x {
		b.out.Data[i] = float32(math.Tanh(float64(x) * b.w))
	}
	return &b.out, nil
}
func (b *tanhBottom) Outputs() []*tensor.Matrix { return []*tensor.Matrix{&b.out} }
func (b *tanhBottom) Backward(g *tensor.Matrix) ([]*tensor.Matrix, error) {
	b.grad = 0
	for i, x := range b.x {
		e := float64(b.out.Data[i])
		b.grad += float64(x) * (1 - e*e) * float64(g.Data[i])
	}
	return []*tensor.Matrix{g}, nil
}
func (b *tanhBottom) Backprop(g *tensor.Matrix) ([]*tensor.Matrix, error) {
	return []*tensor.Matrix{g}, nil
}
func (b *tanhBottom) Step() error {
	if b.moved {
		return errors.New("step while extrapolated")
	}
	b.delta = -b.lr * b.grad
	b.w += b.delta
	return nil
}
func (b *tanhBottom) TrackUpdates() {}
func (b *tanhBottom) Extrapolate(f float32) error {
	if b.moved {
		return errors.New("extrapolated twice")
	}
	b.saved, b.moved = b.w, true
	b.w += float64(f) * b.delta
	return nil
}
func (b *tanhBottom) Restore() {
	if b.moved {
		b.w, b.moved = b.saved, false
	}
}
func (b *tanhBottom) CutDim() int          { return 1 }
func (b *tanhBottom) Save(io.Writer) error { return errors.New("not saved") }
func (b *tanhBottom) Load(io.Reader) error { return errors.New("not loaded") }

// tanhCase is one schedule: staleness k, Q updates per gradient, linear
// weight prediction's factor (0: off), the drain period (0: none) and,
// for tanhSchedule only, weight stashing in place of the recomputed
// forward.
type tanhCase struct {
	k, q, drain int
	predict     float64
	stash       bool
}

// tanhSchedule is the pipelined schedule of docs/methods/wan.md for
// tanhBottom and linearTop, written out in float64 from the definition
// for the steps in order (epochs of the same batches): batch s is
// forwarded with the bottom updated by the gradients of batches 0, …,
// max(s−k, 0)−1; the top takes Q steps on each batch as it arrives; the
// gradient g_t of batch t, applied after every earlier one, moves w by
// −lr·Σ_i x_i·(1 − tanh²(x_i·w'))·g_ti Q times, where w' is the current
// w (recomputed forward) or, with stash, the w batch t was forwarded
// with (PipeDream's weight stashing; used only to show the test tells
// the two apart). It returns every g_t and the final w and v.
func tanhSchedule(x, y []float64, steps [][]int, w, v, lr float64, c tanhCase) ([][]float64, float64, float64) {
	k, q := c.k, c.q
	T := len(steps)
	grads := make([][]float64, T)
	sentW := make([]float64, T)
	applied := 0
	var delta float64 // the last update of w
	stepped := false  // an update since the pipeline was last empty
	apply := func(t int) {
		for range q {
			at := w
			if c.stash {
				at = sentW[t]
			}
			var gw float64
			for i, r := range steps[t] {
				e := float64(float32(math.Tanh(x[r] * at)))
				gw += x[r] * (1 - e*e) * grads[t][i]
			}
			delta = -lr * gw
			w += delta
		}
		stepped = true
	}
	for s := range T {
		from := s - k // the first batch whose gradient may be pending
		if c.drain > 0 {
			from = max(from, s-s%c.drain)
		}
		for applied < from {
			apply(applied)
			applied++
		}
		if applied == s {
			stepped = false
		}
		sentW[s] = w
		if c.predict > 0 && s > applied && stepped {
			sentW[s] = w + float64(float32(c.predict*float64((s-applied)*q)))*delta
		}
		wf := sentW[s]
		rows := steps[s]
		e := make([]float64, len(rows))
		for i, r := range rows {
			e[i] = float64(float32(math.Tanh(x[r] * wf)))
		}
		grads[s], v = topSteps(rows, e, y, v, lr, q)
	}
	for applied < T {
		apply(applied)
		applied++
	}
	return grads, w, v
}

// TestOverlapNonlinearBottom runs a bottom whose Jacobian depends on its
// parameters through the pipelined schedule in one process, two epochs of
// three batches, and checks every gradient the passive received, the
// final w and v against tanhSchedule: the gradient of batch t is applied
// to batch t's own rows through a forward recomputed at the current
// parameters, each exactly Q times, in order. The same comparison against
// weight stashing must fail: the case is one where the two rules differ.
func TestOverlapNonlinearBottom(t *testing.T) {
	x := []float64{0.9, -1.6, 2.2, 1.1, -0.7, 1.8}
	y := []float64{1, 0, 1, 1, 0, 0}
	const batch, lr, w0, v0 = 2, 0.8, 0.9, -1.3
	sched, err := schedule.New(len(x), batch, 7)
	if err != nil {
		t.Fatal(err)
	}
	var steps [][]int
	var order []int
	for e := range 2 {
		order = sched.Order(e, order)
		for b := range sched.BatchesPerEpoch() {
			steps = append(steps, append([]int(nil), sched.Rows(order, b)...))
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(b)) }
	for _, c := range []tanhCase{{k: 0, q: 1}, {k: 1, q: 1}, {k: 2, q: 1}, {k: 4, q: 1}, {k: 2, q: 2}, {k: 1, q: 3},
		{k: 2, q: 1, predict: 1}, {k: 4, q: 1, predict: 2}, {k: 2, q: 2, predict: 1.5}, {k: 2, q: 1, predict: 1, drain: 3}, {k: 4, q: 1, drain: 4}} {
		wantG, wantW, wantV := tanhSchedule(x, y, steps, w0, v0, lr, c)
		got, w, v := runTanh(t, x, y, sched, w0, v0, lr, c)
		if len(got) != len(wantG) {
			t.Fatalf("%+v: %d gradients, want %d", c, len(got), len(wantG))
		}
		for s := range wantG {
			for i := range wantG[s] {
				if !near(got[s][i], wantG[s][i]) {
					t.Errorf("%+v: step %d row %d: gradient %v, want %v", c, s, i, got[s][i], wantG[s][i])
				}
			}
		}
		if !near(w, wantW) || !near(v, wantV) {
			t.Errorf("%+v: w %v v %v, want %v %v", c, w, v, wantW, wantV)
		}
		// Where a batch is applied after later forwards, weight stashing
		// ends elsewhere by far more than the tolerance; so does a
		// prediction switched off or unreset at the drains.
		alt := c
		alt.stash = c.predict == 0
		alt.predict, alt.drain = 0, c.drain
		if c.drain > 0 && c.predict > 0 {
			alt.predict, alt.drain = c.predict, 0
		}
		if _, altW, _ := tanhSchedule(x, y, steps, w0, v0, lr, alt); (c.k > 0 || c.q > 1) && math.Abs(altW-wantW) < 1e-3 {
			t.Errorf("%+v: the rule of %+v ends at w %v, within 1e-3 of %v: the case does not tell them apart", c, alt, altW, wantW)
		}
	}
}

// runTanh trains tanhBottom and linearTop in one process for two epochs
// and returns the gradients the passive observed by step and the final
// w and v.
func runTanh(t *testing.T, x, y []float64, sched *schedule.Schedule, w0, v0, lr float64, c tanhCase) ([][]float64, float64, float64) {
	t.Helper()
	ds := oneColumn(x, y)
	bottom := &tanhBottom{w: w0, lr: lr}
	top := &linearTop{v: v0, lr: lr}
	none, err := protect.New("none", nil)
	if err != nil {
		t.Fatal(err)
	}
	act, err := active.New(top, ds, ds, sched, 1, active.Config{Protector: none, LocalSteps: c.q})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]float64
	pas, err := passive.New(bottom, passive.Split{IDs: ds.IDs, X: ds.X}, passive.Split{}, sched, passive.Config{
		Epochs: 2, Staleness: c.k, LocalSteps: c.q, StalenessPrediction: c.predict, DrainEvery: c.drain,
		Observer: func(ob *passive.Observation) error {
			g := ob.Grads[len(ob.Grads)-1]
			row := make([]float64, g.Rows)
			for i := range row {
				row[i] = float64(g.Data[i])
			}
			got = append(got, row)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	runPair(t, act, pas)
	return got, bottom.w, top.v
}

// TestStalenessPredictionRefused checks that the passive refuses linear
// weight prediction without staleness and with a bottom that cannot
// extrapolate its weights.
func TestStalenessPredictionRefused(t *testing.T) {
	sched, err := schedule.New(4, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	feats := &data.Features{Rows: 4, NumDense: 1, Dense: []float32{1, 2, 3, 4}}
	split := passive.Split{IDs: []uint64{1, 2, 3, 4}, X: feats}
	for _, c := range []struct {
		bottom    model.Bottom
		k         int
		predict   float64
		wantError string
	}{
		{&tanhBottom{}, 0, 1, "staleness prediction 1 with staleness 0"},
		{&tanhBottom{}, 2, -0.5, "staleness prediction -0.5, want 0 to 16"},
		{&tanhBottom{}, 2, math.NaN(), "staleness prediction NaN"},
		{&linearBottom{}, 2, 1, "needs a bottom that can extrapolate its weights"},
	} {
		_, err := passive.New(c.bottom, split, passive.Split{}, sched, passive.Config{Epochs: 1, Staleness: c.k, StalenessPrediction: c.predict})
		if err == nil || !strings.Contains(err.Error(), c.wantError) {
			t.Errorf("%T k=%d F=%v: %v, want %q", c.bottom, c.k, c.predict, err, c.wantError)
		}
	}
	if _, err := passive.New(&tanhBottom{}, split, passive.Split{}, sched, passive.Config{Epochs: 1, Staleness: 2, StalenessPrediction: 1}); err != nil {
		t.Errorf("a valid configuration refused: %v", err)
	}
}
