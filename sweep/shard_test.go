package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{"0/3", Shard{0, 3}, ""},
		{"2/3", Shard{2, 3}, ""},
		{" 0/1 ", Shard{0, 1}, ""},
		{"3/3", Shard{}, "index 3 must be in 0…2"},
		{"-1/3", Shard{}, "index -1"},
		{"0/0", Shard{}, "count 0 must be at least 1"},
		{"1", Shard{}, "want I/N"},
		{"a/3", Shard{}, "whole numbers"},
	}
	for _, tc := range tests {
		got, err := ParseShard(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestShardFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Shard
		source  string
		wantErr string
	}{
		{"none", nil, Shard{0, 1}, "", ""},
		{"slurm", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "2"}, Shard{2, 3}, "SLURM_ARRAY_TASK_ID", ""},
		{"slurm from 1", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3"}, Shard{0, 3}, "SLURM_ARRAY_TASK_ID", ""},
		{"slurm gaps", map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "5"}, Shard{}, "", "contiguous"},
		{"slurm no count", map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, Shard{}, "", "SLURM_ARRAY_TASK_COUNT"},
		{"k8s", map[string]string{"JOB_COMPLETION_INDEX": "4", EnvShardCount: "8"}, Shard{4, 8}, "JOB_COMPLETION_INDEX", ""},
		{"k8s no count", map[string]string{"JOB_COMPLETION_INDEX": "4"}, Shard{}, "", EnvShardCount},
		{"k8s out of range", map[string]string{"JOB_COMPLETION_INDEX": "8", EnvShardCount: "8"}, Shard{}, "", "JOB_COMPLETION_INDEX: the shard index 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, src, err := ShardFromEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || src != tc.source {
				t.Errorf("got %v %q %v, want %v %q", got, src, err, tc.want, tc.source)
			}
		})
	}
}

// TestAssign checks the longest-first greedy assignment on a case worked
// by hand. Costs (synth_rows × epochs) 5,4,3,3,2,2,1 onto 3 shards:
// 5→0, 4→1, 3→2, 3→2 (loads 5,4,6), 2→1 (5,6,6), 2→0 (7,6,6), 1→1.
func TestAssign(t *testing.T) {
	costs := []int{2, 5, 3, 1, 4, 3, 2}
	var runs []RunSpec
	for i, c := range costs {
		runs = append(runs, RunSpec{Name: fmt.Sprint(i), Config: map[string]any{"synth_rows": c * 1000, "epochs": 1}})
	}
	// In cost order: run1(5) run4(4) run2(3) run5(3) run0(2) run6(2) run3(1).
	want := []int{1, 0, 2, 1, 1, 2, 0}
	if got := Assign(runs, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("Assign = %v, want %v", got, want)
	}
	if got := Assign(runs, 1); !reflect.DeepEqual(got, make([]int, 7)) {
		t.Errorf("one shard: %v", got)
	}
	// Epochs count; a data file costs a million rows times sample.
	r := RunSpec{Config: map[string]any{"data": "/x", "sample": 0.25, "epochs": 2}}
	if c := Cost(r); c != 500000 {
		t.Errorf("Cost = %v, want 2 × 1e6 × 0.25", c)
	}
}

// countRuns reads the fake child's log of runs started.
func countRuns(t *testing.T, dir string) map[string]int {
	t.Helper()
	raw, _ := os.ReadFile(filepath.Join(dir, "count"))
	n := map[string]int{}
	for _, l := range strings.Fields(string(raw)) {
		base := filepath.Base(l)
		name, _, _ := strings.Cut(base, "@")
		n[name]++
	}
	return n
}

// dropTiming removes wall-clock columns, which differ between any two runs.
func dropTiming(rows []map[string]string) []map[string]string {
	for _, r := range rows {
		delete(r, "wall_s")
	}
	return rows
}

const shardSweep = `
base: {epochs: 1, synth_rows: 1000}
seeds: [1, 2]
grid:
  - {protect: none}
  - {protect: marvell, marvell_s: [0.1, 1, 4]}
  - {protect: iso, iso_t: [1, 9], synth_rows: 3000}
`

// TestShardsInParallel runs three shards at once into one directory and
// checks that every run ran exactly once and that results.csv equals the
// one-process sweep's.
func TestShardsInParallel(t *testing.T) {
	spec, _ := ParseSpec([]byte(shardSweep), "t")
	runs, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	count := t.TempDir()
	t.Setenv("SWEEP_COUNT_DIR", count)
	t.Setenv("SWEEP_SLOW_MS", "50")
	one := t.TempDir()
	if _, err := Run(context.Background(), runs, one, Options{Jobs: 2, Command: fakeCommand}); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(count, "count"))

	shared := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	mine := make([]int, 3)
	for s := 0; s < 3; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			outs, err := Run(context.Background(), runs, shared, Options{Jobs: 2, Command: fakeCommand, Shard: Shard{s, 3}})
			errs[s] = err
			for _, o := range outs {
				if o.Status == StatusDone {
					mine[s]++
				}
			}
		}(s)
	}
	wg.Wait()
	for s, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", s, err)
		}
	}
	n := countRuns(t, count)
	if len(n) != len(runs) {
		t.Errorf("%d runs ran, want %d: %v", len(n), len(runs), n)
	}
	for name, c := range n {
		if c != 1 {
			t.Errorf("%s ran %d times", name, c)
		}
	}
	// 12 runs: iso (cost 3) ×4, the others (cost 1) ×8 → loads 6+… balanced: each shard 4 or more.
	if mine[0]+mine[1]+mine[2] != len(runs) {
		t.Errorf("shards did %v runs", mine)
	}
	a := dropTiming(readCSV(t, filepath.Join(one, "results.csv")))
	b := dropTiming(readCSV(t, filepath.Join(shared, "results.csv")))
	if !reflect.DeepEqual(a, b) {
		t.Errorf("sharded results.csv differs:\n%v\n%v", a, b)
	}
	for _, r := range b {
		if r["status"] != "done" || r["config_fig"] == "" {
			t.Errorf("row %v", r)
		}
	}
	// Nothing of the sweep's own is left running or half written.
	for _, d := range []string{"claims", "work", "trash"} {
		if e, _ := os.ReadDir(stateDir(shared, d)); len(e) != 0 {
			t.Errorf(".sweep/%s not empty: %v", d, e)
		}
	}
	// The config of a finished run names its final directory.
	cfg, _ := os.ReadFile(filepath.Join(shared, runs[0].Name, "config.yaml"))
	if !strings.Contains(string(cfg), "out: "+filepath.Join(shared, runs[0].Name)+"\n") {
		t.Errorf("config.yaml out:\n%s", cfg)
	}
	// Merge from the directory alone gives the same file.
	before, _ := os.ReadFile(filepath.Join(shared, "results.csv"))
	if err := Merge(shared, nil, 0); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(shared, "results.csv"))
	if string(before) != string(after) {
		t.Errorf("merge changed results.csv:\n%s\n%s", before, after)
	}
}

// deadPID returns the pid of a process that has ended.
func deadPID(t *testing.T) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func writeClaim(t *testing.T, out, name string, c claim, age time.Duration) {
	t.Helper()
	os.MkdirAll(stateDir(out, "claims"), 0o755)
	b, _ := json.Marshal(c)
	p := stateDir(out, "claims", name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	os.Chtimes(p, old, old)
}

// TestClaims: a live claim is left alone (its run shows as running), a
// claim whose process died on this host or whose heartbeat stopped on
// another host is taken over and its work directory removed.
func TestClaims(t *testing.T) {
	spec, _ := ParseSpec([]byte("grid: [{protect: [live, deadpid, stale, fresh]}]\n"), "t")
	runs, _ := spec.Expand()
	out := t.TempDir()
	count := t.TempDir()
	t.Setenv("SWEEP_COUNT_DIR", count)
	host := hostname()
	writeClaim(t, out, "live", claim{Host: "other", PID: 1, Token: "t1", Shard: "0/1"}, 5*time.Second)
	writeClaim(t, out, "deadpid", claim{Host: host, PID: deadPID(t), Token: "t2"}, time.Second)
	writeClaim(t, out, "stale", claim{Host: "other", PID: 1, Token: "t3"}, time.Hour)
	os.MkdirAll(stateDir(out, "work", "stale@t3"), 0o755)

	st := ReadState(out, runs, time.Minute)
	got := []string{st[0].Status, st[1].Status, st[2].Status, st[3].Status}
	if want := []string{"running", "missing", "missing", "missing"}; !reflect.DeepEqual(got, want) {
		t.Errorf("states before %v, want %v (%+v)", got, want, st)
	}
	if !strings.Contains(st[2].Detail, "no heartbeat") || !strings.Contains(st[1].Detail, "has ended") {
		t.Errorf("details %+v", st)
	}

	outs, err := Run(context.Background(), runs, out, Options{Command: fakeCommand, StaleAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if outs[0].Status != StatusElsewhere || !strings.Contains(outs[0].Error, "other") {
		t.Errorf("live claim: %+v", outs[0])
	}
	for _, o := range outs[1:] {
		if o.Status != StatusDone {
			t.Errorf("%+v", o)
		}
	}
	n := countRuns(t, count)
	if n["live"] != 0 || n["deadpid"] != 1 || n["stale"] != 1 || n["fresh"] != 1 {
		t.Errorf("ran %v", n)
	}
	if _, err := os.Stat(stateDir(out, "work", "stale@t3")); err == nil {
		t.Error("the dead claim's work directory was not removed")
	}
	rows := readCSV(t, filepath.Join(out, "results.csv"))
	if rows[0]["status"] != "running" || rows[1]["status"] != "done" {
		t.Errorf("csv %v", rows)
	}
}

// TestFailedKept: a failed attempt's directory and error are kept under
// .sweep/failed for status, and a later success clears them.
func TestFailedKept(t *testing.T) {
	out := t.TempDir()
	spec, _ := ParseSpec([]byte("grid: [{protect: [boom, none]}]\n"), "t")
	runs, _ := spec.Expand()
	if _, err := Run(context.Background(), runs, out, Options{Command: fakeCommand}); err != nil {
		t.Fatal(err)
	}
	st := ReadState(out, runs, 0)
	if st[0].Status != StatusFailed || !strings.Contains(st[0].Error, "solver exploded") || st[1].Status != StatusDone {
		t.Fatalf("%+v", st)
	}
	if _, err := os.Stat(stateDir(out, "failed", "boom", "stderr.log")); err != nil {
		t.Errorf("the failed run's stderr.log was not kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "boom")); err == nil {
		t.Error("a failed run appeared under its final name")
	}
	// Loaded back from the directory alone.
	loaded, err := LoadRuns(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range loaded {
		names = append(names, r.Name)
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"boom", "none"}) || loaded[0].Params[0].Value != "boom" {
		t.Errorf("LoadRuns %+v", loaded)
	}
	// A sharded sweep of another grid into the same directory is refused.
	spec2, _ := ParseSpec([]byte("grid: [{protect: [x, y]}]\n"), "t")
	runs2, _ := spec2.Expand()
	if _, err := Run(context.Background(), runs2, out, Options{Command: fakeCommand, Shard: Shard{0, 2}}); err == nil || !strings.Contains(err.Error(), "holds another sweep") {
		t.Errorf("error %v", err)
	}
}

// FuzzParseShard: any text either parses to a valid shard that prints
// back to itself, or is refused.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "2/3", "3/3", "-1/2", "1", "a/b", " 0/4 ", "0/0", "99999999999999999999/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseShard(text)
		if err != nil {
			return
		}
		if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
			t.Fatalf("%q parsed to the invalid %+v", text, s)
		}
		if s.Count > 1 {
			back, err := ParseShard(s.String())
			if err != nil || back != s {
				t.Fatalf("%q → %v → %v %v", text, s, back, err)
			}
		}
	})
}
