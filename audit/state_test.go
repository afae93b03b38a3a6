package audit

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func stateTestBatch(i int) *Batch {
	r := rand.New(rand.NewPCG(uint64(i), 11))
	n, d := 16, 3
	g, e := tensor.New(n, d), tensor.New(n, d)
	labels := make([]uint8, n)
	ids := make([]uint64, n)
	for k := range n {
		ids[k] = uint64(i*n + k)
		if r.IntN(3) == 0 && i != 1 {
			labels[k] = 1
		}
		for j := range d {
			g.Data[k*d+j] = float32(r.NormFloat64()) * (1 + float32(labels[k]))
			e.Data[k*d+j] = float32(r.NormFloat64())
		}
	}
	return &Batch{Step: int64(i), IDs: ids, Labels: labels, Layers: []string{"cut"},
		Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{e},
		Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{g}, nil }}
}

// TestStateResume checks that an auditor restored from a checkpoint makes
// the same choices and summaries as one that kept going.
func TestStateResume(t *testing.T) {
	names := []string{"norm", "cosine", "hint3_distance", "spectral"}
	ref, err := New(names, true, 9)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := New(names, true, 9)
	const total, cut = 6, 3
	var want []map[string]float64
	for i := range total {
		res, err := ref.Observe(stateTestBatch(i))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, flat(res))
		if i < cut {
			if _, err := a.Observe(stateTestBatch(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(names, true, 9)
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	for i := cut; i < total; i++ {
		res, err := b.Observe(stateTestBatch(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := flat(res); !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("batch %d: %v, want %v", i, got, want[i])
		}
	}
	if !reflect.DeepEqual(b.Summary(), ref.Summary()) {
		t.Errorf("summaries differ:\n%v\n%v", b.Summary(), ref.Summary())
	}
	if err := b.UnmarshalBinary(st); err == nil {
		t.Error("restored into a used auditor")
	}
	c, _ := New(names, true, 9)
	if err := c.UnmarshalBinary(st[:len(st)-3]); err == nil {
		t.Error("truncated state accepted")
	}
	m, _ := New([]string{"memory_norm"}, true, 9)
	if _, err := m.MarshalBinary(); err == nil {
		t.Error("memory attack state saved")
	}
}

func flat(m map[string]*float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if v == nil {
			out[k] = -1
		} else {
			out[k] = *v
		}
	}
	return out
}
