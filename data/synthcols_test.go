package data

import (
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
)

// TestSynthColumnsByInformation checks the split of the synthetic
// columns against the generator: by the generator's own description the
// informative columns are C1, C2, C5, C8, C9, C11, C14, C17, C23 and the
// integers I1, I7, I11, I13; and on generated rows the best single-value
// score of an informative column (C1) separates the classes far better
// than a noise column of more values (C19).
func TestSynthColumnsByInformation(t *testing.T) {
	inf, noise := SynthColumns()
	want := []string{"C1", "C2", "C5", "C8", "C9", "C11", "C14", "C17", "C23", "I1", "I7", "I11", "I13"}
	if !slices.Equal(inf, want) {
		t.Fatalf("informative columns %v, want %v", inf, want)
	}
	if len(inf)+len(noise) != criteoCat+criteoDense {
		t.Fatalf("%d + %d columns, the table has %d", len(inf), len(noise), criteoCat+criteoDense)
	}
	s, err := Generate(20000, 0.25, 3, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The AUC of the training rows' per-value positive rate (in-sample):
	// a column with no information scores near its chance of fitting
	// noise, an informative one well above.
	auc := func(name string) float64 {
		x := s.Train.X
		j := slices.Index(x.CatNames, name)
		pos, cnt := map[int32]float64{}, map[int32]float64{}
		for r := range x.Rows {
			v := x.Cat[r*x.NumCat+j]
			cnt[v]++
			pos[v] += float64(s.Train.Labels[r])
		}
		score := make([]float64, x.Rows)
		for r := range x.Rows {
			v := x.Cat[r*x.NumCat+j]
			score[r] = pos[v] / cnt[v]
		}
		a, _ := metrics.AUC(score, s.Train.Labels, nil)
		return a
	}
	a, b := auc("C1"), auc("C19")
	t.Logf("per-value AUC: C1 %.3f, C19 %.3f", a, b)
	if !(a > b+0.05) {
		t.Errorf("per-value AUC of informative C1 %.3f, of noise C19 %.3f (more values, so more room to fit noise)", a, b)
	}
	parts, err := SynthPartyColumns(2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(parts[0], want) || len(parts[1])+len(parts[2]) != len(noise) || parts[1][0] != noise[0] || parts[2][0] != noise[1] {
		t.Errorf("two parties' columns %v", parts)
	}
	if _, err := SynthPartyColumns(1); err == nil {
		t.Error("one passive party accepted")
	}
}
