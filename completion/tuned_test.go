package completion

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTunedNeverReadsTestLabels: the tuned completion attackers' scores
// and choices do not change when every test label (none of which the
// attacker knows) is flipped, while their AUC does; and they run beside
// the default attacks under "ATTACK_tuned".
func TestTunedNeverReadsTestLabels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	train, trainY := features(r, 2000, 4, 0.25)
	test, testY := features(r, 400, 4, 0.25)
	rows, err := Pick(trainY, 20, 300, 5)
	if err != nil {
		t.Fatal(err)
	}
	run := func(labels []uint8) (map[string][]float64, map[string]string, map[string]Result) {
		a, err := New([]string{"completion", "completion_supervised"}, rows, 512, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Tune(4); err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(&identity{d: 4}, train, test, labels)
		if err != nil {
			t.Fatal(err)
		}
		scores := map[string][]float64{}
		for _, n := range a.Names() {
			scores[n] = slices.Clone(a.Scores(n))
		}
		return scores, a.TunedChoices(), res
	}
	s1, c1, r1 := run(testY)
	flipped := slices.Clone(testY)
	for i := range flipped {
		flipped[i] ^= 1
	}
	s2, c2, r2 := run(flipped)
	for _, n := range []string{"completion_tuned", "completion_supervised_tuned"} {
		if _, ok := s1[n]; !ok || c1[n] == "" {
			t.Fatalf("no %s among %v", n, c1)
		}
		if !slices.Equal(s1[n], s2[n]) || c1[n] != c2[n] {
			t.Errorf("%s: scores or choice changed with the test labels (%s, %s)", n, c1[n], c2[n])
		}
		if r1[n].AUC == r2[n].AUC {
			t.Errorf("%s: AUC %v with true and flipped labels: nothing was poisoned", n, r1[n].AUC)
		}
	}
}
