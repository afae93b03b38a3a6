package audit

import (
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

func TestLayerNames(t *testing.T) {
	for _, tc := range []struct {
		L    int
		want []string
	}{{1, []string{"cut"}}, {2, []string{"first", "cut"}}, {4, []string{"first", "2", "3", "cut"}}} {
		if got := LayerNames(tc.L); !slices.Equal(got, tc.want) {
			t.Fatalf("LayerNames(%d) = %v, want %v", tc.L, got, tc.want)
		}
	}
}

// batch builds a 4-row batch whose cut gradients have norms 1, 2, 3, 4 and
// whose labels are given; the first layer's gradients are the cut's
// reversed in norm.
func batch(labels []uint8) *Batch {
	cut := tensor.FromSlice(4, 2, []float32{1, 0, 0, 2, 3, 0, 0, 4})
	first := tensor.FromSlice(4, 2, []float32{4, 0, 0, 3, 2, 0, 0, 1})
	return &Batch{Labels: labels, IDs: []uint64{10, 11, 12, 13}, Layers: []string{"first", "cut"},
		Grads: []*tensor.Matrix{first, cut},
		Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{first, cut}, nil }}
}

func TestObserveHandComputedAUCs(t *testing.T) {
	a, err := New([]string{"norm"}, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Labels 0,1,0,1: positives have cut norms {2,4}, negatives {1,3}:
	// pairs (2>1, 2<3, 4>1, 4>3) → AUC 3/4. At the first layer the norms
	// are {3,1} vs {4,2}: (3<4, 3>2, 1<4, 1<2) → 1/4 (not flipped).
	leak, err := a.Observe(batch([]uint8{0, 1, 0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := *leak["norm/cut"]; got != 0.75 {
		t.Fatalf("norm/cut = %v, want 0.75", got)
	}
	if got := *leak["norm/first"]; got != 0.25 {
		t.Fatalf("norm/first = %v, want 0.25", got)
	}
	// A batch of one class has no AUC: null, counted as skipped.
	leak, err = a.Observe(batch([]uint8{0, 0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := leak["norm/cut"]; !ok || v != nil {
		t.Fatalf("one-class batch: norm/cut = %v (present %v), want null", v, ok)
	}
	s := a.Summary()["norm/cut"]
	if s.Batches != 1 || s.Skipped != 1 || s.Mean != 0.75 {
		t.Fatalf("summary %+v, want 1 batch, 1 skipped, mean 0.75", s)
	}
	// One batch of 2 positives and 2 negatives: U ∈ 0…4 with counts
	// 1 1 2 1 1 (of 6), so |A − ½| = ½ has probability ⅓ and the chance
	// floor is ½.
	if c := a.Leak().Compositions("norm", "cut"); !slices.Equal(c, []metrics.Composition{{Pos: 2, Neg: 2}}) {
		t.Fatalf("compositions %v, want [{2 2}]", c)
	}
	if math.Abs(s.ChanceQ95Abs-0.5) > 1e-9 {
		t.Fatalf("chance %v, want ½", s.ChanceQ95Abs)
	}
}

func TestCosineWithoutPositivesIsSkipped(t *testing.T) {
	a, err := New([]string{"cosine"}, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	leak, err := a.Observe(batch([]uint8{0, 0, 0, 0}))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := leak["cosine/cut"]; !ok || v != nil {
		t.Fatalf("cosine/cut = %v (present %v), want null", v, ok)
	}
	// With positives, the oracle is a positive's clean gradient; rows 1
	// and 3 point along (0,1), rows 0 and 2 along (1,0): cosine separates
	// them perfectly.
	leak, err = a.Observe(batch([]uint8{0, 1, 0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	if got := *leak["cosine/cut"]; got != 1 {
		t.Fatalf("cosine/cut = %v, want 1", got)
	}
}

func TestMemoryAttackAtEpochEnd(t *testing.T) {
	a, err := New([]string{"memory_norm"}, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[uint64]uint8{10: 0, 11: 1, 12: 0, 13: 1}
	for range 2 {
		if _, err := a.Observe(batch([]uint8{0, 1, 0, 1})); err != nil {
			t.Fatal(err)
		}
	}
	leak, err := a.EndEpoch(func(id uint64) (uint8, bool) { y, ok := labels[id]; return y, ok })
	if err != nil {
		t.Fatal(err)
	}
	// The running mean equals each row's gradient: the same AUCs as norm.
	if got := *leak["memory_norm/cut"]; got != 0.75 {
		t.Fatalf("memory_norm/cut = %v, want 0.75", got)
	}
	if got := *leak["memory_norm/first"]; got != 0.25 {
		t.Fatalf("memory_norm/first = %v, want 0.25", got)
	}
	// One AUC per epoch over every example: composition (2, 2), whose
	// chance floor is ½ (see TestObserveHandComputedAUCs).
	s := a.Summary()["memory_norm/cut"]
	if c := a.Leak().Compositions("memory_norm", "cut"); !slices.Equal(c, []metrics.Composition{{Pos: 2, Neg: 2}}) || s.Batches != 1 ||
		math.Abs(s.ChanceQ95Abs-0.5) > 1e-9 {
		t.Fatalf("memory_norm/cut: compositions %v, summary %+v; want [{2 2}], chance ½", c, s)
	}
	if _, err := a.EndEpoch(func(uint64) (uint8, bool) { return 0, false }); err == nil {
		t.Fatal("no error for an example without a label")
	}
}

func TestUnknownAttack(t *testing.T) {
	if _, err := New([]string{"norm", "telepathy"}, true, 1); err == nil {
		t.Fatal("no error for an unknown attack")
	}
}

// TestNeedsOutputs: the auditor asks for the layers' outputs exactly when
// a per-batch attack reads them (an embedding attack, or a gradient
// attack that reads the output too), not for gradient-only attacks or a
// model attack, which reads the trained bottom at evaluations.
func TestNeedsOutputs(t *testing.T) {
	for _, tc := range []struct {
		attacks []string
		want    bool
	}{
		{[]string{"norm"}, false},
		{[]string{"norm", "cosine", "spectral_grad"}, false},
		{[]string{"completion"}, false},
		{[]string{"norm", "spectral"}, true},
		{[]string{"grad_match"}, true},
		{[]string{"similarity_embed"}, true},
	} {
		a, err := New(tc.attacks, true, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.NeedsOutputs(); got != tc.want {
			t.Errorf("%v: NeedsOutputs %v, want %v", tc.attacks, got, tc.want)
		}
	}
}
