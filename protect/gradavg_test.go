package protect

import (
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func TestGradAvgHandCases(t *testing.T) {
	g := tensor.New(3, 2)
	copy(g.Data, []float32{1, 2, 3, 4, 5, 9})
	for _, c := range []struct {
		p    Params
		want []float32
	}{
		{Params{}, []float32{3, 5, 3, 5, 3, 5}},                     // SecretFlow: the batch mean
		{Params{"grad_avg_group": 2}, []float32{2, 3, 2, 3, 5, 9}},  // [0,2) and the remainder
		{Params{"grad_avg_group": 1}, []float32{1, 2, 3, 4, 5, 9}},  // no averaging
		{Params{"grad_avg_group": 10}, []float32{3, 5, 3, 5, 3, 5}}, // larger than the batch
	} {
		p, err := New("grad_avg", c.p)
		if err != nil {
			t.Fatal(err)
		}
		out := &tensor.Matrix{}
		if _, err := p.Protect(&Batch{Grad: g}, out, nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Data, c.want) {
			t.Errorf("%v: got %v, want %v", c.p, out.Data, c.want)
		}
	}
	for _, p := range []Params{{"grad_avg_group": 0}, {"grad_avg_group": 1.5}} {
		if _, err := New("grad_avg", p); err == nil {
			t.Errorf("New(grad_avg, %v): no error", p)
		}
	}
}

// TestGradAvgKeepsGroupSums checks, on random gradients, that each group's
// rows are equal and sum to the group's clean sum.
func TestGradAvgKeepsGroupSums(t *testing.T) {
	rng := newRNG(11)
	g := tensor.New(37, 5)
	for k := range g.Data {
		g.Data[k] = float32(rng.NormFloat64())
	}
	p, _ := New("grad_avg", Params{"grad_avg_group": 8})
	out := &tensor.Matrix{}
	if _, err := p.Protect(&Batch{Grad: g}, out, nil); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < 37; lo += 8 {
		hi := min(lo+8, 37)
		for c := range 5 {
			var clean, sent float64
			for i := lo; i < hi; i++ {
				clean += float64(g.At(i, c))
				sent += float64(out.At(i, c))
				if out.At(i, c) != out.At(lo, c) {
					t.Fatalf("group [%d,%d): rows differ in column %d", lo, hi, c)
				}
			}
			if math.Abs(clean-sent) > 1e-5 {
				t.Errorf("group [%d,%d) column %d: sum %v, want %v", lo, hi, c, sent, clean)
			}
		}
	}
}
