package audit

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// signedBatch is a batch of n rows whose gradient is +u for positives and
// −u for negatives plus a little noise, with a random layer output: every
// attack that uses known rows, or the gradient's direction, separates it.
func signedBatch(r *rand.Rand, n, d int, step int64) *Batch {
	g, out := tensor.New(n, d), tensor.New(n, d)
	labels := make([]uint8, n)
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(i)
		sign := float32(1)
		if r.Float64() < 0.3 {
			labels[i], sign = 1, -1
		}
		for j := range d {
			g.Row(i)[j] = sign*float32(j+1)/float32(d) + 0.01*float32(r.NormFloat64())
			out.Row(i)[j] = float32(r.NormFloat64())
		}
	}
	return &Batch{Step: step, Labels: labels, IDs: ids, Layers: []string{"cut"},
		Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{out}}
}

// TestObserveGivesKnownRowsAndOutputs checks that the auditor hands the
// similarity attack its known rows with their true labels, and the
// gradient-matching attack the layer's output: both separate the batch.
func TestObserveGivesKnownRowsAndOutputs(t *testing.T) {
	a, err := New([]string{"similarity_grad", "grad_match", "spectral_grad"}, true, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for step := range int64(3) {
		leak, err := a.Observe(signedBatch(r, 200, 8, step))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"similarity_grad/cut", "grad_match/cut", "spectral_grad/cut"} {
			if v := leak[k]; v == nil || *v != 1 {
				t.Errorf("step %d: %s = %v, want 1", step, k, v)
			}
		}
		if len(a.known) != 10 || !slices.Equal(a.knownLabels, labelsOf(a.known, a.lastLabels(t, step))) {
			t.Errorf("step %d: known rows %v with labels %v", step, a.known, a.knownLabels)
		}
	}
}

// lastLabels rebuilds the labels of signedBatch's step (same generator
// sequence) — used only to check the known labels.
func (a *Auditor) lastLabels(t *testing.T, step int64) []uint8 {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 1))
	var b *Batch
	for s := range step + 1 {
		b = signedBatch(r, 200, 8, s)
	}
	return b.Labels
}

func labelsOf(rows []int, labels []uint8) []uint8 {
	out := make([]uint8, len(rows))
	for k, i := range rows {
		out[k] = labels[i]
	}
	return out
}

// TestKnownRowsIndependent checks that the known rows depend on the seed
// and step only, not on which other attacks run.
func TestKnownRowsIndependent(t *testing.T) {
	one, _ := New([]string{"similarity_grad"}, true, 5)
	two, _ := New([]string{"norm", "hint5_inner", "cosine", "similarity_embed"}, true, 5)
	r := rand.New(rand.NewPCG(2, 2))
	b := signedBatch(r, 100, 4, 7)
	b.Clean = func() ([]*tensor.Matrix, error) { return b.Grads, nil }
	if _, err := one.Observe(b); err != nil {
		t.Fatal(err)
	}
	if _, err := two.Observe(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.known, two.known) || len(slices.Compact(slices.Sorted(slices.Values(one.known)))) != 10 {
		t.Errorf("known rows %v and %v", one.known, two.known)
	}
}
