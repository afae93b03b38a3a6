package integrity

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// rankOne returns rows c_i·w (+ noise of scale eps), c_i negative for the
// first neg rows.
func rankOne(rows, neg, d int, eps float64, seed uint64) *tensor.Matrix {
	rng := rand.New(rand.NewPCG(seed, 3))
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.NormFloat64()
	}
	g := tensor.New(rows, d)
	for i := range rows {
		c := 0.5 + rng.Float64()
		if i < neg {
			c = -c
		}
		for j := range d {
			g.Data[i*d+j] = float32(c*w[j] + eps*rng.NormFloat64())
		}
	}
	return g
}

func TestGradientSplitHandCases(t *testing.T) {
	for _, c := range []struct {
		name     string
		g        *tensor.Matrix
		min, max float64
	}{
		{"a quarter of the rows opposite", rankOne(200, 50, 16, 0, 1), 0.25, 0.25},
		{"three quarters opposite: the minority is the other side", rankOne(200, 150, 16, 0, 2), 0.25, 0.25},
		{"one side only", rankOne(200, 0, 16, 0, 3), 0, 0},
		{"one side, with noise", rankOne(200, 0, 16, 0.05, 4), 0, 0},
		// Isotropic rows: the principal direction splits them about evenly.
		{"isotropic", rankOne(2000, 1000, 16, 50, 5), 0.45, 0.5},
	} {
		if got := GradientSplit(c.g); got < c.min || got > c.max {
			t.Errorf("%s: split %v, want in [%v, %v]", c.name, got, c.min, c.max)
		}
	}
	if got := GradientSplit(tensor.New(10, 4)); !math.IsNaN(got) {
		t.Errorf("a zero gradient: %v, want NaN", got)
	}
	same := tensor.New(10, 4)
	for i := range same.Data {
		same.Data[i] = float32(i%4) + 1
	}
	if got := GradientSplit(same); !math.IsNaN(got) {
		t.Errorf("equal rows (a whole-batch average): %v, want NaN", got)
	}
	if got := GradientSplit(tensor.New(1, 4)); !math.IsNaN(got) {
		t.Errorf("one row: %v, want NaN", got)
	}
}

func TestHijackWatchAlarmsAtAFullWindow(t *testing.T) {
	w, err := NewHijackWatch(0.01)
	if err != nil {
		t.Fatal(err)
	}
	honest, hijacked := rankOne(64, 16, 8, 0, 6), rankOne(64, 0, 8, 0, 7)
	for step := range int64(30) { // honest batches never alarm
		if err := w.Batch(step, honest); err != nil {
			t.Fatalf("honest step %d: %v", step, err)
		}
	}
	// One-sided batches: the mean falls under 0.01 only once the window
	// holds no honest batch (mean 0.25·k/20 for k honest ones left).
	for k := range HijackWindow {
		err := w.Batch(int64(30+k), hijacked)
		var a *Alarm
		if k < HijackWindow-1 && err != nil || k == HijackWindow-1 && !errors.As(err, &a) {
			t.Fatalf("hijacked batch %d: %v", k, err)
		}
		if a != nil && (a.Step != int64(30+k) || a.Score != 0 || !a.Below || a.Verdict == "") {
			t.Errorf("alarm %+v", a)
		}
	}
	// A fresh watch needs a full window first, and batches without a
	// figure do not count.
	w2, _ := NewHijackWatch(0.01)
	for step := range int64(HijackWindow - 1) {
		if err := w2.Batch(step, hijacked); err != nil {
			t.Fatalf("step %d of an unfilled window: %v", step, err)
		}
		if err := w2.Batch(step, tensor.New(64, 8)); err != nil {
			t.Fatalf("a zero gradient: %v", err)
		}
	}
	if err := w2.Batch(HijackWindow, hijacked); err == nil {
		t.Errorf("a full window of one-sided batches: no alarm")
	}
	for _, bad := range []float64{0, -1, 0.5, math.NaN()} {
		if _, err := NewHijackWatch(bad); err == nil {
			t.Errorf("threshold %v accepted", bad)
		}
	}
}
