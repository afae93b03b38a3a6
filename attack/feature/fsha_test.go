package feature

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestFSHAGradientIsTheCriticsSlope: the gradient FSHA sends is that of
// −mean_i D(e_i) with respect to e at the critic it had when the batch
// came, checked by central differences of a copy of that critic; the
// autoencoder's error on the public rows falls.
func TestFSHAGradientIsTheCriticsSlope(t *testing.T) {
	x, e := linearBottom(400, 3, 8, 9)
	for i := range e.Data {
		e.Data[i] = float32(math.Max(float64(e.Data[i]), 0)) // a ReLU cut
	}
	f, err := NewFSHA(x, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Hidden = 16
	batch := sliceRows(e, 0, 32)
	aeErr := func() float64 {
		out := f.dec.forward(f.pilot.forward(f.pub))
		var s float64
		for i, v := range out.Data {
			s += float64((v - f.pub.Data[i]) * (v - f.pub.Data[i]))
		}
		return s / float64(len(out.Data))
	}
	var first float64
	for step := range 300 {
		if step > 0 && step%50 == 0 {
			// Differentiate the critic as it is before this step.
			crit := f.critic
			loss := func(m *tensor.Matrix) float64 {
				var s float64
				for _, v := range crit.forward(m).Data {
					s -= float64(v) / float64(m.Rows)
				}
				return s
			}
			want := tensor.New(batch.Rows, batch.Cols)
			const h = 2e-3
			for i := range batch.Data {
				p := batch.Clone()
				p.Data[i] += h
				up := loss(p)
				p.Data[i] -= 2 * h
				want.Data[i] = float32((up - loss(p)) / (2 * h))
			}
			g, err := f.Gradient(batch)
			if err != nil {
				t.Fatal(err)
			}
			var scale float64
			for _, v := range want.Data {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			if scale == 0 {
				t.Fatalf("step %d: the critic is flat", step)
			}
			// A row whose difference crosses a ReLU kink of the critic is
			// off (one row of the 32 did by 4%); at most one such row.
			off := 0
			for i := range g.Data {
				if math.Abs(float64(g.Data[i]-want.Data[i])) > 0.01*scale {
					off++
					t.Logf("step %d: gradient[%d] = %g, central difference %g", step, i, g.Data[i], want.Data[i])
				}
			}
			if off > batch.Cols {
				t.Fatalf("step %d: %d of %d entries differ from the central differences", step, off, len(g.Data))
			}
			continue
		}
		if _, err := f.Gradient(batch); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = aeErr()
		}
	}
	if last := aeErr(); !(last < 0.7*first) {
		t.Errorf("autoencoder error %g after 300 steps, %g after the first", last, first)
	}
	if _, err := f.Gradient(tensor.New(4, 7)); err == nil {
		t.Errorf("a 7-wide embedding was accepted by an 8-wide FSHA")
	}
}
