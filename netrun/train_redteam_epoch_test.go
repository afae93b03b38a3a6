package netrun

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/tensor"
)

// TestRedTeamEpochRecord: the record of an epoch's last batch carries the
// epoch attacks' summary over the epoch's examples (hand-computed: one
// epoch, so each example's running mean is its gradient), the others do
// not; the per-batch summary is the batch's.
func TestRedTeamEpochRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "redteam.jsonl")
	r, err := newRedTeam(path, []string{"norm", "memory_norm"}, false)
	if err != nil {
		t.Fatal(err)
	}
	r.setBatchesPerEpoch(2)
	// Cut gradient norms 1, 2 then 3, 40: over the epoch the 2-means split
	// is {1,2,3} | {40}.
	for b, g := range [][]float32{{1, 0, 0, 2}, {3, 0, 0, 40}} {
		m := tensor.FromSlice(2, 2, g)
		ob := &passive.Observation{Step: int64(b + 1), Batch: b, IDs: []uint64{uint64(2 * b), uint64(2*b + 1)},
			Grads: []*tensor.Matrix{m}, Outputs: []*tensor.Matrix{m}}
		if err := r.observe(ob); err != nil {
			t.Fatal(err)
		}
	}
	r.close()
	recs := readLines[RedTeamRecord](t, path)
	if len(recs) != 2 || recs[0].EpochScores != nil || recs[1].EpochScores == nil {
		t.Fatalf("records %+v: want two, the epoch summary in the second only", recs)
	}
	if s := recs[1].EpochScores["memory_norm/cut"]; s.Clusters != [2]int{3, 1} || s.Flagged != 0.25 {
		t.Errorf("memory_norm/cut over the epoch = %+v, want clusters [3 1]", s)
	}
	if s := recs[1].Scores["norm/cut"]; s.Clusters != [2]int{1, 1} {
		t.Errorf("norm/cut of the second batch = %+v, want clusters [1 1]", s)
	}
}

// TestRedTeamAllOverTheNetwork: a two-process run whose passive runs its
// red team with --attacks all logs exactly the label-free attacks of
// train's "all" at both layers it observes (per batch) and the epoch
// attacks once per epoch, in the record of the epoch's last batch.
func TestRedTeamAllOverTheNetwork(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, 600), filepath.Join(root, "inproc"))
	base.Attacks = []string{"all"}
	act, pas := partyConfigs(base, root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	act.Attacks, pas.RedTeam = []string{"norm"}, true
	pair(t, act, pas)
	recs := readLines[RedTeamRecord](t, filepath.Join(pas.Out, "redteam.jsonl"))
	lf, err := audit.NewLabelFree(config.ExpandAttacks([]string{"all"}), false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{} // ATTACK/LAYER
	for _, n := range lf.Attacks() {
		if needs, _ := attack.Describe(n); !needs.EpochMemory {
			for _, l := range []string{"first", "cut"} {
				want[metrics.Key(n, l)] = true
			}
		}
	}
	epochs := 0
	for _, r := range recs {
		if len(r.Scores) != len(want) {
			t.Fatalf("step %d: %d keys, want %d (%v)", r.Step, len(r.Scores), len(want), slices.Sorted(maps.Keys(want)))
		}
		for k, s := range r.Scores {
			if !want[k] || s.Clusters[0]+s.Clusters[1] != r.Size {
				t.Fatalf("step %d: %s = %+v (rows %d), want one of %v over every row", r.Step, k, s, r.Size, slices.Sorted(maps.Keys(want)))
			}
		}
		if r.EpochScores != nil {
			epochs++
			if s, ok := r.EpochScores[metrics.Key(attack.MemoryNormName, "cut")]; !ok || s.Clusters[0]+s.Clusters[1] == 0 {
				t.Errorf("step %d: epoch scores %v, want memory_norm/cut", r.Step, r.EpochScores)
			}
		}
	}
	if epochs != base.Epochs || len(recs) == 0 {
		t.Errorf("%d records, %d with epoch scores; want %d", len(recs), epochs, base.Epochs)
	}
}
