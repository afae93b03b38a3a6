package plan

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
)

// TestNetOfPriorByHand: the embedding series of the feature prior are
// rewritten as chance + figure − prior q95 (q95 and bound alike, at least
// 0; a prior below its own chance floor counting as that floor), worked
// by hand; a series the prior lacks (a gradient attack) and a
// missing bound stay as they are.
func TestNetOfPriorByHand(t *testing.T) {
	nan := math.NaN()
	s := &rundir.Summary{Leak: map[string]metrics.LeakSummary{
		"spectral/first": {Q95Abs: 0.30, Q95AbsUpper: 0.32, ChanceQ95Abs: 0.15},
		"spectral/cut":   {Q95Abs: 0.10, Q95AbsUpper: nan, ChanceQ95Abs: 0.05},
		"spectral/2":     {Q95Abs: 0.20, Q95AbsUpper: 0.25, ChanceQ95Abs: 0.15},
		"spectral/3":     {Q95Abs: 0.20, Q95AbsUpper: 0.25, ChanceQ95Abs: 0.15},
		"norm/cut":       {Q95Abs: 0.40, Q95AbsUpper: 0.42, ChanceQ95Abs: 0.15},
	}}
	prior := map[string]metrics.LeakSummary{
		"spectral/first": {Q95Abs: 0.28},
		"spectral/cut":   {Q95Abs: 0.40}, // above chance + figure: net 0
		"spectral/2":     {Q95Abs: 0.20}, // equal: the chance floor
		// below its own chance floor 0.16: counts as 0.16, so the net
		// figure is the raw one less the floors' difference.
		"spectral/3": {Q95Abs: 0.12, ChanceQ95Abs: 0.16},
	}
	netOfPrior(s, prior)
	for _, c := range []struct {
		key        string
		q95, upper float64
	}{
		{"spectral/first", 0.15 + 0.30 - 0.28, 0.15 + 0.32 - 0.28}, // 0.17, 0.19
		{"spectral/cut", 0, nan},
		{"spectral/2", 0.15, 0.15 + 0.25 - 0.20},               // 0.15, 0.20
		{"spectral/3", 0.15 + 0.20 - 0.16, 0.15 + 0.25 - 0.16}, // 0.19, 0.24
		{"norm/cut", 0.40, 0.42},
	} {
		l := s.Leak[c.key]
		if math.Abs(l.Q95Abs-c.q95) > 1e-12 || !(math.Abs(l.Q95AbsUpper-c.upper) <= 1e-12 || math.IsNaN(c.upper) && math.IsNaN(l.Q95AbsUpper)) {
			t.Errorf("%s: q95 %v bound %v, want %v and %v", c.key, l.Q95Abs, l.Q95AbsUpper, c.q95, c.upper)
		}
	}
}

// TestEmbeddingAttacks: of the default threat, spectral is the embedding
// attack; the gradient attacks (spectral_grad included) are not.
func TestEmbeddingAttacks(t *testing.T) {
	got := embeddingAttacks(DefaultAttacks())
	if len(got) != 1 || got[0] != "spectral" {
		t.Errorf("embedding attacks of %v: %v, want [spectral]", DefaultAttacks(), got)
	}
}
