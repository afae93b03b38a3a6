package metrics

import (
	"math/rand/v2"
	"testing"
)

// TestAttackSuccessByConfidenceByHand: nine rows, target 1; the eight of
// class 0 have clean logits −10, −1, −20, −3, −0.5, −3, −3, −15 (rows 0,
// 1, 3–8) and triggered logits −9, 2, 1, −1, 3, 0, 4, −2. In order of
// confidence (lowest clean logit first, the three ties at −3 in row
// order): rows 3, 8, 0, 4 | 6, 7, 1, 5. The first half has one triggered
// logit > 0 (row 3): 1/4; the second three (rows 7, 1, 5; row 6's 0 is
// not > 0): 3/4. Had the ties been taken in another order (row 7 before
// row 4) the halves would be 2/4 and 2/4. Three groups (sizes 3, 3, 2:
// row k of 8 to ⌊3k/8⌋): rows 3, 8, 0 → 1/3; 4, 6, 7 → 1/3; 1, 5 → 1.
// One group: 4/8, the attack success rate.
func TestAttackSuccessByConfidenceByHand(t *testing.T) {
	labels := []uint8{0, 0, 1, 0, 0, 0, 0, 0, 0}
	clean := []float32{-10, -1, 5, -20, -3, -0.5, -3, -3, -15}
	trig := []float32{-9, 2, 6, 1, -1, 3, 0, 4, -2}
	for _, tc := range []struct {
		groups int
		want   []float64
	}{{2, []float64{0.25, 0.75}}, {3, []float64{1.0 / 3, 1.0 / 3, 1}}, {1, []float64{0.5}}} {
		got, err := AttackSuccessByConfidence(clean, trig, labels, 1, tc.groups)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRates(got, tc.want) {
			t.Errorf("%d groups: %v, want %v", tc.groups, got, tc.want)
		}
	}
	// One group is the attack success rate itself.
	rate, _, _ := AttackSuccessRate(trig, labels, 1)
	if got, _ := AttackSuccessByConfidence(clean, trig, labels, 1, 1); got[0] != rate {
		t.Errorf("one group %g, attack success rate %g", got[0], rate)
	}
	if got, err := AttackSuccessByConfidence(clean, trig, labels, 1, 9); got != nil || err != nil {
		t.Errorf("9 groups of 8 rows: %v, %v; want nil, nil", got, err)
	}
}

// TestAttackSuccessByConfidenceByRank checks random rows against a
// second computation: each row's group from its rank counted directly
// (the rows more confidently rejected, and the equally confident ones
// before it), no sorting; target 0 against target 1 on the mirrored
// rows (logits negated, labels flipped).
func TestAttackSuccessByConfidenceByRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, groups = 301, 4
	clean, trig, labels := make([]float32, n), make([]float32, n), make([]uint8, n)
	for i := range clean {
		// Logits on a coarse grid, so that ties occur.
		clean[i] = float32(rng.IntN(40)-30) / 4
		trig[i] = clean[i] + float32(rng.NormFloat64()*4)
		labels[i] = uint8(rng.IntN(3) / 2) // about a third of class 1
	}
	var rows []int
	for i, y := range labels {
		if y != 1 {
			rows = append(rows, i)
		}
	}
	hit, size := make([]int, groups), make([]int, groups)
	for _, i := range rows {
		rank := 0
		for _, j := range rows {
			if clean[j] < clean[i] || (clean[j] == clean[i] && j < i) {
				rank++
			}
		}
		g := rank * groups / len(rows)
		size[g]++
		if trig[i] > 0 {
			hit[g]++
		}
	}
	want := make([]float64, groups)
	for g := range want {
		want[g] = float64(hit[g]) / float64(size[g])
	}
	got, err := AttackSuccessByConfidence(clean, trig, labels, 1, groups)
	if err != nil || !sameRates(got, want) {
		t.Errorf("target 1: %v (%v), want %v", got, err, want)
	}
	negClean, negTrig, flipped := make([]float32, n), make([]float32, n), make([]uint8, n)
	for i := range clean {
		negClean[i], negTrig[i], flipped[i] = -clean[i], -trig[i], 1-labels[i]
	}
	got0, err := AttackSuccessByConfidence(negClean, negTrig, flipped, 0, groups)
	if err != nil || !sameRates(got0, want) {
		t.Errorf("target 0, mirrored: %v (%v), want %v", got0, err, want)
	}
}

func TestAttackSuccessByConfidenceErrors(t *testing.T) {
	for name, f := range map[string]func() error{
		"lengths": func() error {
			_, err := AttackSuccessByConfidence([]float32{1}, []float32{1, 2}, []uint8{0, 1}, 1, 1)
			return err
		},
		"target 2": func() error {
			_, err := AttackSuccessByConfidence([]float32{1}, []float32{1}, []uint8{0}, 2, 1)
			return err
		},
		"0 groups": func() error {
			_, err := AttackSuccessByConfidence([]float32{1}, []float32{1}, []uint8{0}, 1, 0)
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func sameRates(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
