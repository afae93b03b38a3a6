package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

func TestMemoryHand(t *testing.T) {
	m := NewMemory()
	if err := m.Observe("cut", []uint64{7, 9}, mat([]float32{1, 0}, []float32{0, 2}), []float32{0, 5}); err != nil {
		t.Fatal(err)
	}
	if err := m.Observe("cut", []uint64{7}, mat([]float32{3, 0}), []float32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Observe("first", []uint64{9}, mat([]float32{1, 1, 1}), nil); err != nil {
		t.Fatal(err)
	}
	var sc MemoryScores
	if err := m.Scores("cut", &sc); err != nil {
		t.Fatal(err)
	}
	// id 7: mean (2,0) → norm 2, cos with ref (0,2) = 0; id 9: (0,2) → 2, 1.
	if !slices.Equal(sc.IDs, []uint64{7, 9}) || !slices.Equal(sc.Norm, []float64{2, 2}) || !slices.Equal(sc.Cosine, []float64{0, 1}) {
		t.Errorf("cut: %+v", sc)
	}
	if err := m.Scores("first", &sc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sc.IDs, []uint64{9}) || !near(sc.Norm[0], math.Sqrt(3), 1e-12) || sc.Cosine != nil {
		t.Errorf("first (no oracle): %+v", sc)
	}
	if !slices.Equal(m.Layers(), []string{"cut", "first"}) || m.Len("cut") != 2 || m.Len("x") != 0 {
		t.Errorf("Layers %v Len %d", m.Layers(), m.Len("cut"))
	}

	for _, tc := range []struct {
		ids    []uint64
		g      *tensor.Matrix
		oracle []float32
		want   string
	}{
		{[]uint64{1}, mat([]float32{1, 2, 3}), nil, "3 columns, earlier batches had 2"},
		{[]uint64{1, 2}, mat([]float32{1, 2}), nil, "2 IDs for 1 gradient rows"},
		{[]uint64{1}, mat([]float32{1, float32(math.NaN())}), nil, "row 0, column 1"},
		{[]uint64{1}, mat([]float32{1, 2}), []float32{1}, "oracle has 1 values"},
	} {
		if err := m.Observe("cut", tc.ids, tc.g, tc.oracle); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Observe: error %v, want %q", err, tc.want)
		}
	}
	if err := m.Scores("nowhere", &sc); err == nil {
		t.Error("Scores of an unseen layer: no error")
	}
}

// TestMemorySeparatesWhatOneBatchCannot: clean gradients +u (positives)
// and −0.2u (negatives) under fresh isotropic noise of σ = 2 per
// coordinate every epoch. One batch barely separates the classes; the
// running mean over 100 epochs shrinks the noise tenfold and does.
func TestMemorySeparatesWhatOneBatchCannot(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const n, d, epochs, batch = 400, 16, 100, 100
	labels := make([]uint8, n)
	for i := range labels {
		if i%5 == 0 {
			labels[i] = 1
		}
	}
	byID := func(id uint64) uint8 { return labels[id-1000] }
	m := NewMemory()
	ids := make([]uint64, batch)
	bl := make([]uint8, batch)
	g := tensor.New(batch, d)
	oracle := make([]float32, d)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	single := map[string]float64{}
	cos, norm := &Cosine{}, &Norm{}
	s := make([]float64, batch)
	f := make([]bool, batch)
	batches := 0
	for range epochs {
		r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo < n; lo += batch {
			for k := range batch {
				ex := perm[lo+k]
				ids[k], bl[k] = uint64(1000+ex), labels[ex]
				c := -0.2
				if labels[ex] == 1 {
					c = 1
				}
				row := g.Row(k)
				for j := range row {
					row[j] = float32(2 * r.NormFloat64())
				}
				row[0] += float32(c)
			}
			// The oracle: a positive's clean gradient, +u.
			clear(oracle)
			oracle[0] = 1
			if err := m.Observe("cut", ids, g, oracle); err != nil {
				t.Fatal(err)
			}
			for name, a := range map[string]Attack{"cosine": cos, "norm": norm} {
				if err := a.Score(&Observation{X: g, Oracle: oracle}, s, f); err != nil {
					t.Fatal(err)
				}
				auc, _ := metrics.AUC(s, bl, f)
				single[name] += auc
			}
			batches++
		}
	}
	var sc MemoryScores
	if err := m.Scores("cut", &sc); err != nil {
		t.Fatal(err)
	}
	all := make([]uint8, len(sc.IDs))
	for i, id := range sc.IDs {
		all[i] = byID(id)
	}
	memCos, _ := metrics.AUC(sc.Cosine, all, nil)
	memNorm, _ := metrics.AUC(sc.Norm, all, nil)
	sCos, sNorm := single["cosine"]/float64(batches), single["norm"]/float64(batches)
	t.Logf("mean single-batch AUC: cosine %.3f norm %.3f; memory: cosine %.3f norm %.3f", sCos, sNorm, memCos, memNorm)
	if sCos > 0.72 || sNorm > 0.62 {
		t.Errorf("single batches separate too well for this test (cosine %v, norm %v)", sCos, sNorm)
	}
	if memCos < 0.97 || memNorm < 0.9 {
		t.Errorf("memory attacks: cosine AUC %v, norm AUC %v; want ≥ 0.97 and ≥ 0.9", memCos, memNorm)
	}
}
