package netrun

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
)

// TestRedTeamAllIsTrainsAll: `passive --red-team --attacks L` runs exactly
// the label-free attacks of what `train --attacks L` runs (config's
// expansion, which the in-process auditor reads), and leaves out, by
// name, exactly those that need labels: the two lists together are
// train's list, in its order. Before, the red team ran the expensive
// grad_match under "all" and no epoch attack.
func TestRedTeamAllIsTrainsAll(t *testing.T) {
	for _, names := range [][]string{{"all"}, {"all", "grad_match"}, {"norm", "cosine", "memory_norm"}} {
		r, err := newRedTeam(filepath.Join(t.TempDir(), "redteam.jsonl"), names, false)
		if err != nil {
			t.Fatal(err)
		}
		got, left := r.aud.Attacks(), r.leftOut()
		r.close()
		train := (&config.Config{Attacks: names}).AttackNames()
		var merged []string
		for _, n := range train {
			if slices.Contains(got, n) || slices.Contains(left, n) {
				merged = append(merged, n)
			}
		}
		if !slices.Equal(merged, train) || len(got)+len(left) != len(train) {
			t.Errorf("--attacks %v: the red team runs %v and leaves out %v; train runs %v", names, got, left, train)
		}
		for _, n := range got {
			needs, _ := attack.Describe(n)
			if !needs.LabelFree() {
				t.Errorf("--attacks %v: the red team runs %s, which needs labels", names, n)
			}
			if needs.Expensive && !slices.Contains(names, n) {
				t.Errorf("--attacks %v: the red team runs the expensive %s, which all leaves out", names, n)
			}
		}
		for _, n := range left {
			if needs, _ := attack.Describe(n); needs.LabelFree() {
				t.Errorf("--attacks %v: the red team leaves out %s, which needs no label", names, n)
			}
		}
	}
	// "all" reaches the epoch attacks too (memory_norm needs no label).
	r, err := newRedTeam(filepath.Join(t.TempDir(), "redteam.jsonl"), []string{"all"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	if !slices.Contains(r.aud.Attacks(), attack.MemoryNormName) || !slices.Contains(r.leftOut(), attack.MemoryCosineName) {
		t.Errorf("--attacks all: the red team runs %v and leaves out %v; want memory_norm run, memory_cosine left out", r.aud.Attacks(), r.leftOut())
	}
}
