package audit

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/tensor"
)

// Two test plug-ins, registered here only: one that needs no label and
// one that needs a hint. Neither is named anywhere outside this file.
func init() {
	attack.Register("zz_toy_free", func() attack.Attack { return toyAttack{name: "zz_toy_free"} })
	attack.Register("zz_toy_hint", func() attack.Attack { return toyAttack{name: "zz_toy_hint", hints: 1} })
}

// toyAttack scores row i with i.
type toyAttack struct {
	name  string
	hints int
}

func (a toyAttack) Name() string { return a.name }

func (a toyAttack) Needs() attack.Needs { return attack.Needs{Input: attack.Gradient, Hints: a.hints} }

func (a toyAttack) Score(obs *attack.Observation, scores []float64, scored []bool) error {
	for i := range scores {
		scores[i] = float64(i)
	}
	for _, h := range obs.Hints[:min(a.hints, len(obs.Hints))] {
		scored[h] = false
	}
	return nil
}

// TestToyAttackJoinsEveryMode: an attack registered in its own file is in
// "all" for train (attack.Expand, which config and the labelled auditor
// read) and, when it needs no label, in the label-free mode; one that
// needs a label is named as left out. No other file changes.
func TestToyAttackJoinsEveryMode(t *testing.T) {
	all := attack.Expand([]string{"all"})
	for _, n := range []string{"zz_toy_free", "zz_toy_hint"} {
		if !slices.Contains(all, n) {
			t.Errorf("all = %v: %s missing", all, n)
		}
	}
	lf, err := NewLabelFree([]string{"all"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(lf.Attacks(), "zz_toy_free") || slices.Contains(lf.Attacks(), "zz_toy_hint") {
		t.Errorf("label-free mode runs %v: want zz_toy_free, not zz_toy_hint", lf.Attacks())
	}
	if !slices.Contains(lf.LeftOut(), "zz_toy_hint") {
		t.Errorf("label-free mode leaves out %v: want zz_toy_hint named", lf.LeftOut())
	}
	got := map[string]ScoreSummary{}
	if err := lf.Observe(batch(nil), got); err != nil {
		t.Fatal(err)
	}
	// Scores 0, 1, 2, 3: the 2-means split is {0,1} | {2,3}.
	if s := got["zz_toy_free/cut"]; s.Clusters != [2]int{2, 2} || s.Flagged != 0.5 {
		t.Errorf("zz_toy_free/cut = %+v, want clusters [2 2], flagged 0.5", s)
	}
	// The labelled auditor runs both toys from the same list.
	a, err := New([]string{"zz_toy_free", "zz_toy_hint"}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	leak, err := a.Observe(batch([]uint8{0, 1, 0, 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"zz_toy_free/cut", "zz_toy_hint/cut"} {
		if _, ok := leak[k]; !ok {
			t.Errorf("the labelled auditor has no %s (keys %v)", k, leak)
		}
	}
}

// TestLabelFreeHandScores: norm's summary of a batch and memory_norm's of
// two batches, from hand-computed norms; cosine (it needs the oracle) is
// left out, and no label is read.
func TestLabelFreeHandScores(t *testing.T) {
	lf, err := NewLabelFree([]string{"norm", "cosine", attack.MemoryNormName}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lf.Attacks(), []string{"norm", attack.MemoryNormName}) || !slices.Equal(lf.LeftOut(), []string{"cosine"}) {
		t.Fatalf("runs %v, leaves out %v", lf.Attacks(), lf.LeftOut())
	}
	got := map[string]ScoreSummary{}
	if err := lf.Observe(batch(nil), got); err != nil {
		t.Fatal(err)
	}
	// Cut norms 1, 2, 3, 4: within-cluster sums of squares 2, 1, 2 for the
	// cuts after 1, 2, 3 rows: {1,2} | {3,4}.
	if s := got["norm/cut"]; s.Clusters != [2]int{2, 2} || s.Flagged != 0.5 || s.Q05 > s.Q50 || s.Q50 > s.Q95 {
		t.Errorf("norm/cut = %+v", s)
	}
	// Second batch, same IDs: cut rows (3,0), (0,2), (3,0), (0,4). Running
	// means (2,0), (0,2), (3,0), (0,4): norms 2, 2, 3, 4.
	b := batch(nil)
	b.Grads[1] = tensor.FromSlice(4, 2, []float32{3, 0, 0, 2, 3, 0, 0, 4})
	if err := lf.Observe(b, got); err != nil {
		t.Fatal(err)
	}
	ep := map[string]ScoreSummary{}
	if err := lf.EndEpoch(ep); err != nil {
		t.Fatal(err)
	}
	want := Summarise([]float64{2, 2, 3, 4})
	if s := ep["memory_norm/cut"]; s != want || s.Clusters != [2]int{2, 2} {
		t.Errorf("memory_norm/cut = %+v, want %+v (clusters [2 2])", s, want)
	}
	lf.Forget()
	ep = map[string]ScoreSummary{}
	if err := lf.EndEpoch(ep); err != nil || len(ep) != 0 {
		t.Errorf("after Forget: %v, %v; want nothing remembered", ep, err)
	}
}

func TestNewLabelFreeRefusesLabelledOnly(t *testing.T) {
	if _, err := NewLabelFree([]string{"cosine"}, false); err == nil {
		t.Fatal("an attack list with no label-free attack was accepted")
	}
	if _, err := NewLabelFree([]string{"no_such_attack"}, false); err == nil {
		t.Fatal("an unknown attack was accepted")
	}
}

// TestSummariseAgainstBruteForce: the 2-means split against a direct
// search over every cut (two-pass means, no prefix sums), and hand cases.
func TestSummariseAgainstBruteForce(t *testing.T) {
	for _, tc := range []struct {
		s        []float64
		clusters [2]int
	}{
		{[]float64{5}, [2]int{1, 0}},
		{[]float64{1, 1, 1}, [2]int{3, 0}},
		{[]float64{10.1, 0, 0.2, 10, 0.1}, [2]int{3, 2}},
		{[]float64{0, 0, 0, 1}, [2]int{3, 1}},
	} {
		if got := Summarise(slices.Clone(tc.s)); got.Clusters != tc.clusters || got.Flagged != float64(tc.clusters[1])/float64(len(tc.s)) {
			t.Errorf("Summarise(%v) = %+v, want clusters %v", tc.s, got, tc.clusters)
		}
	}
	if got := Summarise([]float64{3, 1, 5, 2, 4}); got.Q50 != 3 {
		t.Errorf("median of 1..5 = %v, want 3", got.Q50)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 2 + r.IntN(30)
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Round(r.NormFloat64()*4) + 10*float64(r.IntN(2))
		}
		got := Summarise(slices.Clone(s))
		slices.Sort(s)
		best, cut := math.Inf(1), n
		for k := 1; k < n; k++ {
			if s[k] == s[k-1] {
				continue
			}
			if v := sse(s[:k]) + sse(s[k:]); v < best-1e-9 {
				best, cut = v, k
			}
		}
		if cut != got.Clusters[0] {
			// Equal sums of squares may split either way.
			if v := sse(s[:got.Clusters[0]]) + sse(s[got.Clusters[0]:]); math.Abs(v-best) > 1e-9 {
				t.Fatalf("trial %d: %v: split after %d rows (SSE %v), brute force after %d (SSE %v)", trial, s, got.Clusters[0], v, cut, best)
			}
		}
	}
}

// sse is the sum of squared deviations from the mean, in two passes.
func sse(s []float64) float64 {
	var m float64
	for _, v := range s {
		m += v
	}
	m /= float64(len(s))
	var out float64
	for _, v := range s {
		out += (v - m) * (v - m)
	}
	return out
}
