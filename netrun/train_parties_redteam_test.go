package netrun

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
)

// TestPartiesRedTeam: with several passive parties each passive runs its
// own label-free red team on what it receives (its own block of the
// gradient) and writes a record for every training step; the records of
// the two parties differ (each sees only its block); every score covers
// every row of its batch.
func TestPartiesRedTeam(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties")
	}
	root := t.TempDir()
	base := threePartyBase(synthFile(t, 900), filepath.Join(root, "inproc"))
	act, pas := threePartyConfigs(base, root, "")
	for k := range pas {
		pas[k].RedTeam = true
	}
	_, perrs, err := runThree(t, act, pas)
	if err = errors.Join(append(perrs, err)...); err != nil {
		t.Fatal(err)
	}
	var recs [][]RedTeamRecord
	for _, p := range pas {
		r := readLines[RedTeamRecord](t, filepath.Join(p.Out, "redteam.jsonl"))
		if len(r) == 0 {
			t.Fatalf("%s: no red-team record", p.Name)
		}
		for i, rec := range r {
			if rec.Step != int64(i) || len(rec.Scores) == 0 {
				t.Fatalf("%s: record %d is of step %d with %d scores, want step %d with scores", p.Name, i, rec.Step, len(rec.Scores), i)
			}
			for k, s := range rec.Scores {
				if s.Clusters[0]+s.Clusters[1] != rec.Size {
					t.Fatalf("%s: step %d: %s splits %v of %d rows", p.Name, rec.Step, k, s.Clusters, rec.Size)
				}
			}
		}
		recs = append(recs, r)
	}
	if len(recs[0]) != len(recs[1]) {
		t.Fatalf("%d and %d records: both parties train every step", len(recs[0]), len(recs[1]))
	}
	if reflect.DeepEqual(recs[0], recs[1]) {
		t.Fatal("both parties' red teams recorded the same scores: each receives its own block of the gradient")
	}
}
