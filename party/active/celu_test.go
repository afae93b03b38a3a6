package active_test

import (
	"context"
	"math"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/transport/inproc"
)

// sign1 is the cosine similarity of two 1-wide rows: 1 when they point
// the same way, −1 when opposite, 0 when one is zero, 1 when both are.
func sign1(a, b float64) float64 {
	switch {
	case a == 0 && b == 0:
		return 1
	case a == 0 || b == 0:
		return 0
	case (a > 0) == (b > 0):
		return 1
	}
	return -1
}

// expectedCELU is CELU-VFL's schedule (docs/methods/wan.md) for the
// linear bottom and top at staleness 0, computed in float64 from its
// definition: each party caches the last W batches (the active the
// embedding and the gradient it sent, the passive the gradient received
// and the embedding sent); its m-th local update of the run uses cached
// batch m mod min(batches cached, W) in order of arrival modulo W; with
// a threshold xi each row's term is weighted by the cosine of the stale
// and fresh statistic (the active: the gradient of the embedding; the
// passive: the embedding), 0 under xi.
func expectedCELU(x, y []float64, batches [][]int, w, v, lr float64, W, Q int, xi *float64) ([][]float64, float64, float64) {
	type slot struct {
		rows []int
		e, g []float64
	}
	weight := func(c float64) float64 {
		switch {
		case xi == nil:
			return 1
		case c >= *xi:
			return c
		}
		return 0
	}
	sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	aSlots, pSlots := make([]slot, W), make([]slot, W)
	var nA, mA, nP, mP int
	grads := make([][]float64, len(batches))
	for s, rows := range batches {
		n := float64(len(rows))
		e := make([]float64, len(rows))
		g := make([]float64, len(rows))
		var gv float64
		for i, r := range rows {
			e[i] = float64(float32(x[r] * w))
			d := (sig(e[i]*v) - y[r]) / n
			g[i] = d * v
			gv += d * e[i]
		}
		v -= lr * gv
		grads[s] = g
		aSlots[nA%W] = slot{rows, e, g}
		nA++
		for range Q - 1 {
			sl := aSlots[mA%min(nA, W)]
			mA++
			var gv float64
			for i, r := range sl.rows {
				d := (sig(sl.e[i]*v) - y[r]) / float64(len(sl.rows))
				d *= weight(sign1(sl.g[i], d*v))
				gv += d * sl.e[i]
			}
			v -= lr * gv
		}
		var gw float64
		for i, r := range rows {
			gw += x[r] * g[i]
		}
		w -= lr * gw
		pSlots[nP%W] = slot{rows, e, g}
		nP++
		for range Q - 1 {
			sl := pSlots[mP%min(nP, W)]
			mP++
			var gw float64
			for i, r := range sl.rows {
				fresh := float64(float32(x[r] * w))
				gw += x[r] * sl.g[i] * weight(sign1(sl.e[i], fresh))
			}
			w -= lr * gw
		}
	}
	return grads, w, v
}

// celuCase is one run of the linear parties: staleness k, Q local
// updates, CELU-VFL's cache W and threshold ξ (nil: no weighting), over
// epochs (0: 2).
type celuCase struct {
	w, q   int
	xi     *float64
	k      int
	epochs int
}

// linearRun is what runLinear saw: the gradients the passive observed and
// those the active sent, by step, and the final w and v.
type linearRun struct {
	got            [][]float64
	observed, sent [][]float32
	w, v           float64
}

// runLinear trains the linear bottom and top in one process.
func runLinear(t *testing.T, x, y []float64, sched *schedule.Schedule, w0, v0, lr float64, c celuCase) linearRun {
	t.Helper()
	ds := oneColumn(x, y)
	feats, ids := ds.X, ds.IDs
	bottom := &linearBottom{w: w0, lr: lr}
	top := &linearTop{v: v0, lr: lr}
	none, err := protect.New("none", nil)
	if err != nil {
		t.Fatal(err)
	}
	var r linearRun
	act, err := active.New(top, ds, ds, sched, 1, active.Config{Protector: none, LocalSteps: c.q, LocalCache: c.w, LocalWeightThreshold: c.xi,
		Observer: func(ob *active.Observation) error {
			r.sent = append(r.sent, append([]float32(nil), ob.Protected.Data...))
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	epochs := c.epochs
	if epochs == 0 {
		epochs = 2
	}
	pas, err := passive.New(bottom, passive.Split{IDs: ids, X: feats}, passive.Split{}, sched, passive.Config{
		Epochs: epochs, Staleness: c.k, LocalSteps: c.q, LocalCache: c.w, LocalWeightThreshold: c.xi,
		Observer: func(ob *passive.Observation) error {
			if ob.Step != int64(len(r.got)) {
				t.Errorf("%+v: observed step %d, want %d", c, ob.Step, len(r.got))
			}
			g := ob.Grads[len(ob.Grads)-1]
			r.observed = append(r.observed, append([]float32(nil), g.Data...))
			row := make([]float64, g.Rows)
			for i := range row {
				row[i] = float64(g.Data[i])
			}
			r.got = append(r.got, row)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	runPair(t, act, pas)
	r.w, r.v = bottom.w, top.v
	return r
}

// oneColumn is the table of x (one dense column) and labels y, IDs from
// 100.
func oneColumn(x, y []float64) *data.Dataset {
	n := len(x)
	ds := &data.Dataset{X: &data.Features{Rows: n, NumDense: 1}, IDs: make([]uint64, n), Labels: make([]uint8, n)}
	for i := range n {
		ds.X.Dense = append(ds.X.Dense, float32(x[i]))
		ds.IDs[i] = uint64(100 + i)
		ds.Labels[i] = uint8(y[i])
	}
	return ds
}

// runPair runs the two parties over an in-process pipe until both end.
func runPair(t *testing.T, act *active.Active, pas *passive.Passive) {
	t.Helper()
	pc, ac := inproc.Pipe()
	done := make(chan error, 1)
	go func() { done <- act.Serve(context.Background(), ac) }()
	if err := pas.Run(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestCELUClosedForm runs CELU-VFL's local updates (W = 2, Q = 3, with
// and without instance weighting, over two epochs of three batches) with
// a linear bottom and top and compares every gradient the passive
// received and the final parameters with expectedCELU; the bottom's weight
// changes sign so that the weighting drops (or, at ξ = −1, turns round)
// rows.
// With W = 1 and ξ = −1 it must equal FedBCD's local steps bit for bit
// (the linear rows never turn round there, so every weight is 1).
func TestCELUClosedForm(t *testing.T) {
	x := []float64{0.5, -1.25, 2, 0.75, -0.5, 1.5}
	y := []float64{1, 0, 1, 1, 0, 0}
	const batch, lr, w0 = 2, 0.5, 0.8
	sched, err := schedule.New(len(x), batch, 7)
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]int
	for ep := range 2 {
		order := sched.Order(ep, nil)
		for b := range sched.BatchesPerEpoch() {
			batches = append(batches, append([]int(nil), sched.Rows(order, b)...))
		}
	}
	xi := func(v float64) *float64 { return &v }
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-5*(1+math.Abs(b)) }
	var finals []float64
	for _, c := range []celuCase{{w: 2, q: 3}, {w: 2, q: 3, xi: xi(-1)}, {w: 2, q: 3, xi: xi(0.5)}, {w: 3, q: 4, xi: xi(0)}} {
		const v0 = -0.6
		wantG, wantW, wantV := expectedCELU(x, y, batches, w0, v0, lr, c.w, c.q, c.xi)
		r := runLinear(t, x, y, sched, w0, v0, lr, c)
		got, gotW, gotV := r.got, r.w, r.v
		if len(got) != len(wantG) {
			t.Fatalf("W=%d Q=%d ξ=%v: %d gradients, want %d", c.w, c.q, c.xi, len(got), len(wantG))
		}
		for s := range wantG {
			for i := range wantG[s] {
				if !near(got[s][i], wantG[s][i]) {
					t.Errorf("W=%d Q=%d ξ=%v: step %d row %d: gradient %v, want %v", c.w, c.q, c.xi, s, i, got[s][i], wantG[s][i])
				}
			}
		}
		if !near(gotW, wantW) || !near(gotV, wantV) {
			t.Errorf("W=%d Q=%d ξ=%v: w %v v %v, want %v %v", c.w, c.q, c.xi, gotW, gotV, wantW, wantV)
		}
		finals = append(finals, gotV)
	}
	// The test can tell the options apart: weighting changed the run.
	if finals[0] == finals[2] {
		t.Errorf("ξ=0.5 ended with the top of no weighting (v %v): no row was dropped", finals[0])
	}
	// W = 1, ξ = −1 through CELU's code path against FedBCD's, from a
	// top whose rows keep their direction.
	const v0 = 0.05
	plain := runLinear(t, x, y, sched, w0, v0, lr, celuCase{w: 1, q: 3})
	celu := runLinear(t, x, y, sched, w0, v0, lr, celuCase{w: 1, q: 3, xi: xi(-1)})
	plainG, plainW, plainV := plain.got, plain.w, plain.v
	celuG, celuW, celuV := celu.got, celu.w, celu.v
	if plainW != celuW || plainV != celuV {
		t.Errorf("W=1 ξ=-1: w %v v %v, FedBCD %v %v", celuW, celuV, plainW, plainV)
	}
	for s := range plainG {
		for i := range plainG[s] {
			if plainG[s][i] != celuG[s][i] {
				t.Errorf("W=1 ξ=-1: step %d row %d: gradient %v, FedBCD %v", s, i, celuG[s][i], plainG[s][i])
			}
		}
	}
}
