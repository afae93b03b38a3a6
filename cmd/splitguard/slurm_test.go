package main

// The Slurm tests: a real single-node cluster (scripts/slurm-up.sh, run by
// .ci/run) runs the sweep experiments/quick.yaml as a job array of three
// tasks. They run only with SPLITGUARD_SLURM_TEST=1 and sinfo on the PATH.

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// slurmEnv is the variable that enables the Slurm tests.
const slurmEnv = "SPLITGUARD_SLURM_TEST"

// timingColumns differ between any two runs of the same configuration,
// and so does every column naming a time in seconds ("baseline.seconds").
var timingColumns = map[string]bool{"wall_s": true, "seconds": true, "examples_per_s": true, "step_ms_mean": true, "protect_ms_mean": true}

// isTiming says whether results.csv column h is a timing.
func isTiming(h string) bool { return timingColumns[h] || strings.HasSuffix(h, ".seconds") }

func needSlurm(t *testing.T) {
	t.Helper()
	if os.Getenv(slurmEnv) != "1" {
		t.Skipf("Slurm tests skipped: set %s=1 on a machine with a Slurm cluster (scripts/slurm-up.sh brings one up as root; .ci/run does)", slurmEnv)
	}
	if _, err := exec.LookPath("sinfo"); err != nil {
		t.Fatalf("%s=1 but sinfo is not on the PATH: run scripts/slurm-up.sh", slurmEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%a %t").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "up") {
		t.Fatalf("sinfo: %v\n%s", err, out)
	}
}

// quickSpec writes experiments/quick.yaml with its data cut to rows
// synthetic rows (the grid, seeds and every other key unchanged) and three
// shards of small resources.
func quickSpec(t *testing.T, dir string, rows int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "experiments", "quick.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["base"].(map[string]any)["synth_rows"] = rows
	doc["resources"] = map[string]any{"shards": 3, "jobs": 1, "cpus": 2, "memory_mb": 1500, "time_minutes": 10}
	text, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "quick.yaml")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// resultsWithoutTiming reads results.csv as run → column → cell, without
// the wall-clock columns.
func resultsWithoutTiming(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			if !isTiming(h) {
				m[h] = r[i]
			}
		}
		out[r[0]] = m
	}
	return out
}

// slurmCmd runs a Slurm command with a time limit.
func slurmCmd(t *testing.T, limit time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// tail prints the array tasks' output files after a failure.
func slurmLogs(t *testing.T, out string) {
	logs, _ := filepath.Glob(filepath.Join(out, ".sweep", "slurm", "*.out"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("== %s\n%s", l, b)
	}
}

func compareResults(t *testing.T, want, got map[string]map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d runs in results.csv, want %d", len(got), len(want))
	}
	for run, w := range want {
		g := got[run]
		if g["status"] != "done" {
			t.Errorf("%s: status %q", run, g["status"])
		}
		if !reflect.DeepEqual(g, w) {
			for k := range w {
				if g[k] != w[k] {
					t.Errorf("%s %s: Slurm %q, one machine %q", run, k, g[k], w[k])
				}
			}
		}
	}
}

// TestSlurm runs the sweep on one machine, then as a Slurm array of three
// tasks (results.csv must match figure for figure), then again with one
// task cancelled mid-run and the array resubmitted (only the missing runs
// may run again, and nothing may be lost).
func TestSlurm(t *testing.T) {
	needSlurm(t)
	needBinary(t)
	dir := t.TempDir()
	spec := quickSpec(t, dir, 30000)
	sg(t, dir, "sweep", spec, "--out", "one", "--jobs", "2")
	want := resultsWithoutTiming(t, filepath.Join(dir, "one", "results.csv"))
	if len(want) != 9 {
		t.Fatalf("the one-machine sweep has %d runs, want 9", len(want))
	}

	t.Run("array", func(t *testing.T) {
		out := filepath.Join(dir, "array")
		sg(t, dir, "sweep", "export", "--slurm", spec, "--out", out, "--exe", binary)
		script, _ := os.ReadFile(filepath.Join(out, "sweep.sbatch"))
		if !strings.Contains(string(script), "#SBATCH --array=0-2\n") || !strings.Contains(string(script), "#SBATCH --requeue\n") {
			t.Fatalf("script:\n%s", script)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sbatch", "--wait", filepath.Join(out, "sweep.sbatch"))
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			slurmLogs(t, out)
			t.Fatalf("sbatch --wait: %v\n%s", err, b)
		}
		// Each of the three tasks ran its own shard.
		for i := 0; i < 3; i++ {
			logs, _ := filepath.Glob(filepath.Join(out, ".sweep", "slurm", "*_"+string(rune('0'+i))+".out"))
			if len(logs) != 1 {
				t.Errorf("task %d: %d logs", i, len(logs))
				continue
			}
			b, _ := os.ReadFile(logs[0])
			if !strings.Contains(string(b), "shard "+string(rune('0'+i))+"/3 (from SLURM_ARRAY_TASK_ID)") {
				t.Errorf("task %d log:\n%s", i, b)
			}
		}
		compareResults(t, want, resultsWithoutTiming(t, filepath.Join(out, "results.csv")))
	})

	t.Run("cancel and resubmit", func(t *testing.T) {
		out := filepath.Join(dir, "resubmit")
		sg(t, dir, "sweep", "export", "--slurm", spec, "--out", out, "--exe", binary)
		script := filepath.Join(out, "sweep.sbatch")
		job := strings.TrimSpace(slurmCmd(t, 30*time.Second, "sbatch", "--parsable", script))
		job, _, _ = strings.Cut(job, ";")
		// Wait until task 1 has started a run, then cancel it.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if time.Now().After(deadline) {
				slurmLogs(t, out)
				slurmCmd(t, 30*time.Second, "scancel", job)
				t.Fatal("task 1 never started a run")
			}
			claims, _ := os.ReadDir(filepath.Join(out, ".sweep", "claims"))
			started := false
			for _, c := range claims {
				b, _ := os.ReadFile(filepath.Join(out, ".sweep", "claims", c.Name()))
				if strings.Contains(string(b), `"shard":"1/3"`) {
					started = true
				}
			}
			if started {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		slurmCmd(t, 30*time.Second, "scancel", job+"_1")
		// Wait for the whole array to end.
		for deadline = time.Now().Add(3 * time.Minute); ; {
			if q := slurmCmd(t, 30*time.Second, "squeue", "-h", "-j", job); strings.TrimSpace(q) == "" {
				break
			}
			if time.Now().After(deadline) {
				slurmCmd(t, 30*time.Second, "scancel", job)
				t.Fatal("the array did not end")
			}
			time.Sleep(time.Second)
		}
		status := sg(t, dir, "sweep", "status", out)
		if !strings.Contains(status, "missing") {
			t.Fatalf("nothing missing after cancelling task 1:\n%s", status)
		}
		if strings.Contains(status, "running ") {
			t.Errorf("a run still shows as running after its task ended:\n%s", status)
		}
		// What is done now must stay as it is.
		before := map[string]string{}
		entries, _ := os.ReadDir(out)
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(out, e.Name(), "sweep.json")); err == nil {
				before[e.Name()] = string(b)
			}
		}
		if len(before) == 0 || len(before) == 9 {
			t.Fatalf("%d runs done before resubmitting, want some but not all", len(before))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sbatch", "--wait", script)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			slurmLogs(t, out)
			t.Fatalf("resubmitted sbatch --wait: %v\n%s", err, b)
		}
		reran := 0
		entries, _ = os.ReadDir(out)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(out, e.Name(), "sweep.json"))
			if err != nil {
				continue
			}
			if old, ok := before[e.Name()]; ok && old != string(b) {
				t.Errorf("%s was done before the resubmission and ran again", e.Name())
			}
			if _, ok := before[e.Name()]; !ok {
				reran++
				var rec struct{ Host, Shard string }
				json.Unmarshal(b, &rec)
				if rec.Shard == "" {
					t.Errorf("%s: sweep.json %s", e.Name(), b)
				}
			}
		}
		if reran != 9-len(before) {
			t.Errorf("%d runs ran after the resubmission, want the %d missing", reran, 9-len(before))
		}
		compareResults(t, want, resultsWithoutTiming(t, filepath.Join(out, "results.csv")))
	})
}
