package netrun

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
)

// TestRedTeamAllIsTrainsAll: `passive --red-team --attacks all` runs the
// label-free attacks of what `train --attacks all` runs (config's
// expansion: an expensive attack only when named), not every registered
// one (before this test it also ran the expensive grad_match).
func TestRedTeamAllIsTrainsAll(t *testing.T) {
	for _, names := range [][]string{{"all"}, {"all", "grad_match"}} {
		r, err := newRedTeam(filepath.Join(t.TempDir(), "redteam.jsonl"), names, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range r.attacks {
			got = append(got, a.Name())
		}
		r.close()
		var want []string
		for _, n := range config.ExpandAttacks(names) {
			if slices.Contains(LabelFreeAttacks(), n) {
				want = append(want, n)
			}
		}
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Errorf("--attacks %v: the red team runs %v, want %v", names, got, want)
		}
		for _, n := range got {
			if needs, _ := attack.Describe(n); needs.Expensive && !slices.Contains(names, n) {
				t.Errorf("--attacks %v: the red team runs the expensive %s, which all leaves out", names, n)
			}
		}
	}
}
