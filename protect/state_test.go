package protect

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// stateBatch makes batch i of a fixed sequence; batches 2 and 4 hold
// negatives only, so the protectors fall back on their remembered state.
func stateBatch(i int) *Batch {
	r := rand.New(rand.NewPCG(uint64(i), 5))
	n, d := 12, 4
	g := tensor.New(n, d)
	labels := make([]float32, n)
	probs := make([]float32, n)
	for k := range n {
		if i != 2 && i != 4 && k%3 == 0 {
			labels[k] = 1
		}
		probs[k] = 0.1 + 0.8*r.Float32()
		for j := range d {
			g.Data[k*d+j] = float32(r.NormFloat64()) * (1 + labels[k])
		}
	}
	return &Batch{Grad: g, Labels: labels, Probs: probs, Step: int64(i)}
}

// TestStateResume checks that a protector restored from the state saved
// after batch k perturbs batches k+1… exactly as the one that kept going.
func TestStateResume(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Params
	}{{"marvell", Params{"marvell_s": 2}}, {"marvell", Params{"marvell_error_bound": 0.3}}, {"max_norm_label", Params{}}} {
		const total, cutAt = 7, 3
		ref, _ := New(c.name, c.o)
		rngRef := rand.New(rand.NewPCG(1, 2))
		var want [][]float32
		for i := range total {
			out := &tensor.Matrix{}
			if _, err := ref.Protect(stateBatch(i), out, rngRef); err != nil {
				t.Fatal(err)
			}
			want = append(want, slices.Clone(out.Data))
		}
		first, _ := New(c.name, c.o)
		pcg := rand.NewPCG(1, 2)
		rng := rand.New(pcg)
		for i := range cutAt {
			if _, err := first.Protect(stateBatch(i), &tensor.Matrix{}, rng); err != nil {
				t.Fatal(err)
			}
		}
		st, err := State(first)
		if err != nil || len(st) == 0 {
			t.Fatalf("%s: state %d bytes, %v", c.name, len(st), err)
		}
		rs, _ := pcg.MarshalBinary()
		second, _ := New(c.name, c.o)
		if err := SetState(second, st); err != nil {
			t.Fatal(err)
		}
		pcg2 := rand.NewPCG(0, 0)
		if err := pcg2.UnmarshalBinary(rs); err != nil {
			t.Fatal(err)
		}
		rng2 := rand.New(pcg2)
		for i := cutAt; i < total; i++ {
			out := &tensor.Matrix{}
			if _, err := second.Protect(stateBatch(i), out, rng2); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.Data, want[i]) {
				t.Fatalf("%s %+v: batch %d differs after resuming", c.name, c.o, i)
			}
		}
		// A truncated or foreign state is refused.
		if err := SetState(second, st[:len(st)-1]); err == nil {
			t.Errorf("%s: truncated state accepted", c.name)
		}
	}
	none, _ := New("none", Params{})
	if st, err := State(none); st != nil || err != nil {
		t.Errorf("none: state %v, %v", st, err)
	}
	if err := SetState(none, []byte{1}); err == nil {
		t.Error("none accepted a state")
	}
	mnl, _ := New("max_norm_label", Params{})
	mv, _ := New("marvell", Params{"marvell_s": 1})
	st, _ := State(mv)
	if err := SetState(mnl, st); err == nil {
		t.Error("max_norm_label accepted Marvell's state")
	}
}
