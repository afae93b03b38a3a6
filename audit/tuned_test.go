package audit

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// tunedBatch is a batch whose gradient and output carry the labels in a
// few columns, with noise, so that the candidates differ.
func tunedBatch(step int64) *Batch {
	r := rand.New(rand.NewPCG(uint64(step), 21))
	n, d := 96, 6
	g, e := tensor.New(n, d), tensor.New(n, d)
	labels := make([]uint8, n)
	ids := make([]uint64, n)
	for i := range n {
		ids[i] = uint64(step)*1000 + uint64(i)
		if r.Float64() < 0.3 {
			labels[i] = 1
		}
		y := float64(labels[i])
		for j := range d {
			g.Row(i)[j] = float32(r.NormFloat64()*float64(1+j) + y*(0.8-0.3*float64(j)))
			e.Row(i)[j] = float32(r.NormFloat64() + y*0.5*float64(j%2))
		}
	}
	return &Batch{Step: step, IDs: ids, Labels: labels, Layers: []string{"cut"},
		Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{e}}
}

// tunedNames are the attacks of the poisoning test: every per-batch attack
// whose input is chosen without labels (the hint and oracle attacks get
// their hints and oracle from the labels by definition).
var tunedNames = []string{"norm", "majority_cosine", "spectral", "spectral_grad", "similarity_grad", "similarity_embed"}

// runTuned audits batches 0..steps−1 (labels changed by poison when not
// nil, given the batch and its known rows) and returns every tuned
// attacker's score vectors and flags per step, its final choices and the
// leak series.
func runTuned(t *testing.T, steps int64, poison func(b *Batch, known []int)) (scores map[string][][]float64, flags map[string][][]bool, choices map[string]string, a *Auditor) {
	t.Helper()
	a, err := New(tunedNames, true, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Tune(24, 6); err != nil {
		t.Fatal(err)
	}
	scores, flags = map[string][][]float64{}, map[string][][]bool{}
	a.onScores = func(key string, s []float64, f []bool) {
		if strings.Contains(key, "_tuned/") {
			scores[key] = append(scores[key], slices.Clone(s))
			flags[key] = append(flags[key], slices.Clone(f))
		}
	}
	for step := range steps {
		b := tunedBatch(step)
		if poison != nil {
			a.pickKnown(b) // the known rows depend on the seed and step only
			poison(b, slices.Clone(a.known))
		}
		if _, err := a.Observe(b); err != nil {
			t.Fatal(err)
		}
	}
	return scores, flags, a.TunedChoices(), a
}

// TestTunedNeverReadsHiddenLabels: with every label outside the known rows
// randomised (or all flipped), each tuned attacker chooses the same
// setting and writes the same scores, batch by batch; its leak AUC, which
// the auditor computes against the (poisoned) labels, does change.
func TestTunedNeverReadsHiddenLabels(t *testing.T) {
	const steps = 8
	wantS, wantF, wantC, ref := runTuned(t, steps, nil)
	if len(wantC) != len(tunedNames) || len(wantS) != len(tunedNames) {
		t.Fatalf("choices %v for %d attacks", wantC, len(tunedNames))
	}
	chosen := 0
	for _, c := range wantC {
		if !strings.HasPrefix(c, "sign=1 ") && !strings.Contains(c, "=no sign=1 ") && !strings.Contains(c, "threshold=0 sign=1 ") {
			chosen++
		}
	}
	if chosen == 0 {
		t.Fatalf("every tuned attacker kept its defaults (%v): the test would prove nothing", wantC)
	}
	for _, tc := range []struct {
		name   string
		poison func(b *Batch, known []int)
	}{
		{"randomised", func(b *Batch, known []int) {
			r := rand.New(rand.NewPCG(uint64(b.Step), 99))
			for i := range b.Labels {
				if !slices.Contains(known, i) {
					b.Labels[i] = uint8(r.IntN(2))
				}
			}
		}},
		{"flipped", func(b *Batch, known []int) {
			for i := range b.Labels {
				if !slices.Contains(known, i) {
					b.Labels[i] ^= 1
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotS, gotF, gotC, a := runTuned(t, steps, tc.poison)
			if !maps.Equal(gotC, wantC) {
				t.Errorf("choices changed:\n%v\nwant\n%v", gotC, wantC)
			}
			if !reflect.DeepEqual(gotS, wantS) || !reflect.DeepEqual(gotF, wantF) {
				t.Error("tuned scores changed when only hidden labels changed")
			}
			if reflect.DeepEqual(a.Summary()["norm_tuned/cut"], ref.Summary()["norm_tuned/cut"]) {
				t.Error("the poisoned labels did not change the leak figures: nothing was poisoned")
			}
		})
	}
}

// TestTunedStateResume: an auditor with tuned attackers restored from a
// checkpoint makes the same choices and figures as one that kept going;
// a checkpoint with tuned records is refused by an auditor without them.
func TestTunedStateResume(t *testing.T) {
	mk := func() *Auditor {
		a, err := New([]string{"similarity_grad", "spectral"}, true, 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Tune(16, 5); err != nil {
			t.Fatal(err)
		}
		return a
	}
	ref, a := mk(), mk()
	const total, cut = 6, 3
	for i := range int64(total) {
		if _, err := ref.Observe(tunedBatch(i)); err != nil {
			t.Fatal(err)
		}
		if i < cut {
			if _, err := a.Observe(tunedBatch(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b := mk()
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	for i := int64(cut); i < total; i++ {
		if _, err := b.Observe(tunedBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(b.Summary(), ref.Summary()) || !maps.Equal(b.TunedChoices(), ref.TunedChoices()) {
		t.Errorf("after the restore: %v\nwithout: %v", b.TunedChoices(), ref.TunedChoices())
	}
	plain, _ := New([]string{"similarity_grad", "spectral"}, true, 4)
	if err := plain.UnmarshalBinary(st); err == nil {
		t.Error("tuned records restored into an auditor without tuned attackers")
	}
	if err := mk().Tune(16, 5); err == nil {
		t.Error("Tune twice accepted")
	}
	if x, _ := New([]string{"norm"}, true, 4); x.Tune(65, 5) == nil {
		t.Error("65 known rows accepted")
	}
}
