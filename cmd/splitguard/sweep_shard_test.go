package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepShardsCLI runs a two-run sweep as two shards, one after the
// other, and checks what `sweep status` says in between and after, and how
// the shard is taken from the environment or the flag.
func TestSweepShardsCLI(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "s.yaml")
	os.WriteFile(spec, []byte("base: {synth_rows: 3000, epochs: 1, batch: 256, eval_every: 0, attacks: [norm]}\ngrid:\n  - {protect: none}\n  - {protect: iso, iso_t: 1}\n"), 0o644)

	// A Slurm array task number outside its array is an error naming it.
	cmd := exec.Command(binary, "sweep", spec, "--out", "d")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_COUNT=2", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "SLURM_ARRAY_TASK_ID: the shard index 5 must be in 0…1") {
		t.Errorf("bad Slurm environment: %v\n%s", err, out)
	}

	// --shard wins over the environment.
	cmd = exec.Command(binary, "sweep", spec, "--out", "d", "--shard", "0/2", "--jobs", "1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_COUNT=2")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "shard 0/2 (from --shard)") || !strings.Contains(string(out), "shard 0/2: 1 of 2 runs, 0 failed") {
		t.Fatalf("shard 0: %v\n%s", err, out)
	}
	st := sg(t, dir, "sweep", "status", "d")
	if !strings.Contains(st, "2 runs: 1 done, 0 running, 0 failed, 1 missing") {
		t.Errorf("status after shard 0:\n%s", st)
	}
	// The other shard, from a Kubernetes-style environment.
	cmd = exec.Command(binary, "sweep", spec, "--out", "d", "--jobs", "1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=1", "SPLITGUARD_SHARD_COUNT=2")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "shard 1/2 (from JOB_COMPLETION_INDEX)") {
		t.Fatalf("shard 1: %v\n%s", err, out)
	}
	st = sg(t, dir, "sweep", "status", "d", "--all")
	if !strings.Contains(st, "2 runs: 2 done, 0 running, 0 failed, 0 missing") || !strings.Contains(st, "done     iso-iso_t=1") {
		t.Errorf("status after both shards:\n%s", st)
	}
	if out := sg(t, dir, "sweep", "merge", "d"); !strings.Contains(out, "results.csv") {
		t.Errorf("merge: %s", out)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "d", "results.csv"))
	if strings.Count(string(raw), ",done,") != 2 {
		t.Errorf("results.csv:\n%s", raw)
	}
}
