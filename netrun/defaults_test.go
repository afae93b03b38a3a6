package netrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultCutAndCheckpointPruning runs both parties of a table run
// with the cut left at its zero value (the model's default), which once
// panicked indexing layer −1, with a checkpoint every 2 steps, and checks
// that each party keeps only its 2 newest checkpoints, the last step's
// among them.
func TestDefaultCutAndCheckpointPruning(t *testing.T) {
	if testing.Short() {
		t.Skip("two-party run")
	}
	root := t.TempDir()
	base := smallConfig(synthFile(t, 600), "")
	base.Cut, base.Layers = 0, []int{8, 8, 8, 8}
	base.Epochs, base.EvalEvery = 1, 0
	base.Protect, base.Params = "none", nil
	base.Attacks = []string{"norm"}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.CheckpointEvery, pas.CheckpointEvery = 2, 2
	sum := pair(t, act, pas)
	if sum.Steps < 6 {
		t.Fatalf("%d steps, want at least 6 to prune", sum.Steps)
	}
	for _, c := range []Config{act, pas} {
		dir := filepath.Join(c.Out, "checkpoints")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".ckpt") {
				names = append(names, e.Name())
			}
		}
		if len(names) != 2 {
			t.Errorf("%s holds %v, want the 2 newest checkpoints", dir, names)
		}
	}
	yaml, err := os.ReadFile(filepath.Join(act.Out, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(yaml), "cut: 3\n") {
		t.Errorf("config.yaml does not hold the resolved cut:\n%s", yaml)
	}
}

func TestKeepCheckpointsValidated(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "x", "y", "127.0.0.1:1", true
	c.KeepCheckpoints = 1
	if err := c.validate("active"); err == nil || !strings.Contains(err.Error(), "keep 1 checkpoints (key keep_checkpoints), want at least 2") {
		t.Errorf("keep 1: error %v", err)
	}
	c.KeepCheckpoints = 2
	if err := c.validate("active"); err != nil {
		t.Errorf("keep 2: %v", err)
	}
}

// TestPruneKeepsTheNewestGood checks that pruning never deletes the
// checkpoint just written and deletes nothing when it does not read back.
func TestPruneKeepsTheNewestGood(t *testing.T) {
	s := store{dir: t.TempDir(), role: "active", keep: 2}
	for _, step := range []int64{1, 2, 3, 4} {
		if err := s.save(step, bytesSection("m", []byte("x"))); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.steps(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("kept %v, want [3 4]", got)
	}
	// A corrupt newest checkpoint: nothing is pruned.
	if err := os.WriteFile(s.path(5), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.prune(5); err == nil {
		t.Error("pruning after a corrupt checkpoint succeeded")
	}
	if got, _ := s.steps(); len(got) != 3 {
		t.Errorf("after a corrupt newest checkpoint kept %v, want [3 4 5]", got)
	}
}
