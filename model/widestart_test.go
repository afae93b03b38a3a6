package model

import (
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// TestStartWideIsTheRegression checks that a top started from a logistic
// regression scores every row with that regression's logit, computed by
// hand — b + w[id] + w_a·(x_a − mean_a)·scale_a — whatever the deep part's
// input and whether the wide part reads min–max or standardised values;
// and that the wide linear weights' penalty has the gradient of
// (λ/2)·w_regression² in the wide part's own weight, by central
// differences.
func TestStartWideIsTheRegression(t *testing.T) {
	x := wideTable() // column a: 0, 0.5, 1 (mean 0.5, sd √(1/6)); b constant 0.3
	inv := 1 / math.Sqrt(1.0/6)
	const lambda = 0.1
	s := WideStart{W: []float64{-0.4, 0.9, 1.5, 7}, B: -0.25, Mean: []float64{0.5, 0.3}, Scale: []float64{inv, 0}, Lambda: lambda, Penalise: true}
	for _, standardise := range []bool{false, true} {
		top := wdlTop(t, standardise, x)
		if err := top.StartWide(s); err != nil {
			t.Fatal(err)
		}
		e := tensor.New(3, 4)
		for i := range e.Data {
			e.Data[i] = float32(i%7) * 0.3 // the deep part's input matters not: its logit weights are 0
		}
		var b data.Batch
		x.Gather([]int{0, 1, 2}, &b)
		got, err := top.Forward(e, &b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			want := s.B + s.W[x.Cat[i]] + s.W[2]*(float64(x.Dense[2*i])-0.5)*inv
			if math.Abs(float64(got[i])-want) > 1e-5 {
				t.Errorf("standardised %v, row %d: logit %v, want the regression's %v", standardise, i, got[i], want)
			}
		}
		// The penalty's gradient, alone (zero loss gradient).
		if _, err := top.Backward(make([]float32, 3)); err != nil {
			t.Fatal(err)
		}
		r := 1.0 // the wide part's 1/sd: 1 for min–max values
		if standardise {
			r = float64(top.wideScale.meanInv[2])
		}
		v := float64(top.wideLin.W.Data[0])
		f := func(v float64) float64 { w := v * r / inv; return lambda / 2 * w * w }
		const h = 1e-4
		want := (f(v+h) - f(v-h)) / (2 * h)
		if g := float64(top.wideLin.Params()[0].G.Data[0]); math.Abs(g-want) > 1e-4*math.Max(1, math.Abs(want)) {
			t.Errorf("standardised %v: penalty gradient %v, want %v", standardise, g, want)
		}
		if top.wideLin.W.Data[1] != 0 {
			t.Errorf("the constant column's weight %v, want 0 (its scale is 0)", top.wideLin.W.Data[1])
		}
		if top.wideEmb.L2 != lambda/2 {
			t.Errorf("wide embeddings' L2 %v, want λ/2 = %v (Embedding adds 2·L2·w)", top.wideEmb.L2, lambda/2)
		}
	}
}

// TestStartWideRefuses checks the errors: a regression of other columns,
// a non-finite weight, a negative λ, a model without a wide part.
func TestStartWideRefuses(t *testing.T) {
	x := wideTable()
	ok := WideStart{W: []float64{0, 0, 0, 0}, Mean: []float64{0, 0}, Scale: []float64{1, 1}}
	for _, tc := range []struct {
		name string
		edit func(*WideStart)
		want string
	}{
		{"too few weights", func(s *WideStart) { s.W = s.W[:3] }, "3 weights"},
		{"other numeric columns", func(s *WideStart) { s.Mean, s.Scale = s.Mean[:1], s.Scale[:1] }, "1 numeric columns"},
		{"a NaN weight", func(s *WideStart) { s.W = []float64{0, math.NaN(), 0, 0} }, "NaN"},
		{"negative λ", func(s *WideStart) { s.Lambda = -1 }, "L2 strength"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			if err := wdlTop(t, true, x).StartWide(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	_, mlp, err := NewMLP(Config{Widths: []int{4, 4}, Cut: 1}, SchemaOf(x))
	if err != nil {
		t.Fatal(err)
	}
	if err := mlp.StartWide(ok); err == nil || !strings.Contains(err.Error(), "no wide part") {
		t.Errorf("a model without a wide part: %v", err)
	}
}
