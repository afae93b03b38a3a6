package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestMain lets the test binary act as a fake `splitguard train` child:
// with SWEEP_FAKE_CHILD set it reads its config and behaves as it says.
func TestMain(m *testing.M) {
	if os.Getenv("SWEEP_FAKE_CHILD") == "1" {
		fakeChild()
		return
	}
	os.Exit(m.Run())
}

// fakeChild: `--config PATH --out DIR`. A config with "protect: boom"
// fails with stderr output; "protect: hang" sleeps until killed; anything
// else writes a summary.json whose figures depend on the config.
func fakeChild() {
	args := os.Args
	var cfgPath, out string
	for i := range args {
		switch args[i] {
		case "--config":
			cfgPath = args[i+1]
		case "--out":
			out = args[i+1]
		}
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	text := string(raw)
	switch {
	case strings.Contains(text, "protect: boom"):
		fmt.Fprintln(os.Stderr, "loading data...\nsplitguard: marvell: solver exploded")
		os.Exit(1)
	case strings.Contains(text, "protect: hang"):
		time.Sleep(time.Minute)
		os.Exit(4)
	case strings.Contains(text, "protect: nosummary"):
		os.Exit(0)
	}
	if c := os.Getenv("SWEEP_COUNT_DIR"); c != "" {
		f, _ := os.OpenFile(filepath.Join(c, "count"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintln(f, out)
		f.Close()
	}
	// A figure that depends on the configuration (not on where it runs).
	fig := 0
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "out:") {
			for _, b := range []byte(line) {
				fig += int(b)
			}
		}
	}
	if d := os.Getenv("SWEEP_SLOW_MS"); d != "" {
		ms, _ := strconv.Atoi(d)
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	sum := `{"config_fig": ` + strconv.Itoa(fig) + `, "test_auc_best": 0.78, "steps": 10, "protect": "x", "leak": {"norm/cut": {"q95": 0.9, "q95_abs": 0.4, "mean": 0.8, "batches": 9, "skipped": 1}, "spectral/cut": {"q95": null, "q95_abs": null, "mean": null, "batches": 0, "skipped": 10}}}`
	os.WriteFile(filepath.Join(out, "batches.jsonl"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(out, "summary.json"), []byte(sum), 0o644)
}

func fakeCommand(ctx context.Context, cfg, dir string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "--config", cfg, "--out", dir)
	cmd.Env = append(os.Environ(), "SWEEP_FAKE_CHILD=1")
	return cmd, nil
}

func TestExpand(t *testing.T) {
	src := `
base: {synth_rows: 2000, epochs: 1, attacks: [norm, cosine]}
seeds: [1, 2]
grid:
  - {protect: none}
  - {protect: marvell, marvell_s: [0.1, 4]}
  - {protect: iso, iso_t: [1, 9], dcor_alpha: [0, 0.002]}
  - {protect: none, attacks: [[norm], [spectral, norm]]}
`
	spec, err := ParseSpec([]byte(src), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	want := []string{
		"none-seed=1", "none-seed=2",
		"marvell-marvell_s=0.1-seed=1", "marvell-marvell_s=0.1-seed=2", "marvell-marvell_s=4-seed=1", "marvell-marvell_s=4-seed=2",
		"iso-iso_t=1-dcor_alpha=0-seed=1", "iso-iso_t=1-dcor_alpha=0-seed=2", "iso-iso_t=1-dcor_alpha=0.002-seed=1", "iso-iso_t=1-dcor_alpha=0.002-seed=2",
		"iso-iso_t=9-dcor_alpha=0-seed=1", "iso-iso_t=9-dcor_alpha=0-seed=2", "iso-iso_t=9-dcor_alpha=0.002-seed=1", "iso-iso_t=9-dcor_alpha=0.002-seed=2",
		"none-attacks=norm-seed=1", "none-attacks=norm-seed=2", "none-attacks=spectral+norm-seed=1", "none-attacks=spectral+norm-seed=2",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names\n%q\nwant\n%q", names, want)
	}
	r := runs[4] // marvell s=4 seed 1
	if r.Config["marvell_s"] != 4 || r.Config["seed"] != uint64(1) || r.Config["synth_rows"] != 2000 || r.Config["protect"] != "marvell" {
		t.Errorf("config %v", r.Config)
	}
	if got := runs[0].Config["attacks"]; !reflect.DeepEqual(got, []any{"norm", "cosine"}) {
		t.Errorf("base list attacks = %v, want [norm cosine] unexpanded", got)
	}
	if got := runs[16].Config["attacks"]; !reflect.DeepEqual(got, []any{"spectral", "norm"}) {
		t.Errorf("grid attacks = %v, want [spectral norm]", got)
	}
}

func TestSpecErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"no grid", "base: {epochs: 1}\n", "no grid"},
		{"unknown key", "grid: [{protect: none}]\nbogus: 1\n", "bogus"},
		{"out in base", "base: {out: x}\ngrid: [{protect: none}]\n", "base sets out"},
		{"seed in grid", "grid: [{protect: none, seed: [1, 2]}]\n", "seed is set by the sweep"},
		{"empty list", "grid: [{protect: iso, iso_t: []}]\n", "iso_t is an empty list"},
		{"key without value", "grid: [{protect}]\n", "protect has no value"},
		{"empty value in a list", "grid: [{protect: iso, iso_t: [1, \"\"]}]\n", "iso_t has no value"},
		{"not a mapping", "grid: [none]\n", "grid entry 1"},
		{"duplicate", "grid: [{protect: none}, {protect: none}]\n", "same run"},
		{"dataset without name", "datasets: [{data: x}]\ngrid: [{protect: none}]\n", "needs a name"},
		{"empty", "", "empty file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseSpec([]byte(tc.src), "t.yaml")
			if err == nil {
				_, err = spec.Expand()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDatasets(t *testing.T) {
	spec, err := ParseSpec([]byte(`
base: {epochs: 1, format: criteo}
datasets:
  - {name: criteo, data: /d/criteo.txt}
  - {name: avazu, data: /d/avazu.csv, format: avazu, batch: 32768}
grid: [{protect: none}]
`), "t")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Name != "criteo-none" || runs[1].Name != "avazu-none" {
		t.Fatalf("runs %+v", runs)
	}
	if runs[1].Config["format"] != "avazu" || runs[1].Config["batch"] != 32768 || runs[0].Config["format"] != "criteo" || runs[1].Dataset != "avazu" {
		t.Errorf("dataset overrides: %v / %v", runs[0].Config, runs[1].Config)
	}
}

func readCSV(t *testing.T, path string) []map[string]string {
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
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

func TestRunResumeAndFailures(t *testing.T) {
	out := t.TempDir()
	count := t.TempDir()
	t.Setenv("SWEEP_COUNT_DIR", count)
	spec, err := ParseSpec([]byte(`
base: {epochs: 1}
grid:
  - {protect: none}
  - {protect: marvell, marvell_s: [0.1, 1]}
  - {protect: boom}
  - {protect: nosummary}
`), "t")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// A half-written directory of an interrupted run must be cleaned.
	stale := filepath.Join(out, "none", "batches.jsonl")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	os.WriteFile(stale, []byte("{\"step\":1}\n{\"st"), 0o644)
	os.WriteFile(filepath.Join(out, "none", "junk"), []byte("x"), 0o644)

	var prog bytes.Buffer
	var validated atomic.Int32
	opt := Options{Jobs: 2, Command: fakeCommand, Progress: &prog,
		Validate: func(p string) error { validated.Add(1); return nil }}
	outcomes, err := Run(context.Background(), runs, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, o := range outcomes {
		status[o.Name] = o.Status
	}
	want := map[string]string{"none": "done", "marvell-marvell_s=0.1": "done", "marvell-marvell_s=1": "done", "boom": "failed", "nosummary": "failed"}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("status %v, want %v", status, want)
	}
	if validated.Load() != 5 {
		t.Errorf("validated %d configs, want 5", validated.Load())
	}
	if _, err := os.Stat(filepath.Join(out, "none", "junk")); err == nil {
		t.Error("the interrupted run's directory was not cleaned")
	}
	cfg, _ := os.ReadFile(filepath.Join(out, "marvell-marvell_s=1", "config.yaml"))
	for _, w := range []string{"marvell_s: 1\n", "protect: marvell\n", "out: " + filepath.Join(out, "marvell-marvell_s=1")} {
		if !strings.Contains(string(cfg), w) {
			t.Errorf("config.yaml lacks %q:\n%s", w, cfg)
		}
	}
	rows := readCSV(t, filepath.Join(out, "results.csv"))
	if len(rows) != 5 {
		t.Fatalf("%d csv rows, want 5", len(rows))
	}
	byName := map[string]map[string]string{}
	for _, r := range rows {
		byName[r["run"]] = r
	}
	m := byName["marvell-marvell_s=0.1"]
	if m["cfg.marvell_s"] != "0.1" || m["cfg.protect"] != "marvell" || m["leak.norm/cut.q95_abs"] != "0.4" ||
		m["leak.spectral/cut.q95"] != "" || m["leak.spectral/cut.skipped"] != "10" || m["test_auc_best"] != "0.78" {
		t.Errorf("marvell row %v", m)
	}
	b := byName["boom"]
	if b["status"] != "failed" || !strings.Contains(b["error"], "solver exploded") || b["leak.norm/cut.q95"] != "" {
		t.Errorf("failed row %v", b)
	}
	if !strings.Contains(byName["nosummary"]["error"], "without writing summary.json") {
		t.Errorf("nosummary row %v", byName["nosummary"])
	}
	log := prog.String()
	if !strings.Contains(log, "FAILED boom") || !strings.Contains(log, "sweep: 3/5 done, 0 running, 2 failed") {
		t.Errorf("progress log:\n%s", log)
	}

	// Second run: the three finished runs are not run again; the failed
	// ones are retried.
	os.Remove(filepath.Join(count, "count"))
	outcomes, err = Run(context.Background(), runs, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := os.ReadFile(filepath.Join(count, "count")); len(c) != 0 {
		t.Errorf("finished runs were run again: %s", c)
	}
	resumed := 0
	for _, o := range outcomes {
		if o.Resumed {
			resumed++
		}
	}
	if resumed != 3 {
		t.Errorf("%d runs resumed, want 3", resumed)
	}
}

func TestRunInterrupted(t *testing.T) {
	out := t.TempDir()
	spec, _ := ParseSpec([]byte("grid: [{protect: hang}, {protect: [none, x1, x2]}]\n"), "t")
	runs, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	start := time.Now()
	outcomes, err := Run(ctx, runs, out, Options{Jobs: 1, Command: fakeCommand})
	if err == nil || !strings.Contains(err.Error(), "resume") {
		t.Errorf("error %v, want a stopped sweep", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("took %v to stop", time.Since(start))
	}
	if outcomes[0].Status != StatusInterrupted || outcomes[1].Status != StatusSkipped {
		t.Errorf("outcomes %+v", outcomes)
	}
	rows := readCSV(t, filepath.Join(out, "results.csv"))
	if rows[0]["status"] != "missing" || rows[3]["status"] != "missing" {
		t.Errorf("csv rows %v", rows)
	}
}

func TestValidateStopsEarly(t *testing.T) {
	out := t.TempDir()
	spec, _ := ParseSpec([]byte("grid: [{protect: none}, {protect: iso}]\n"), "t")
	runs, _ := spec.Expand()
	_, err := Run(context.Background(), runs, out, Options{Command: func(context.Context, string, string) (*exec.Cmd, error) {
		t.Error("a child started although a config was invalid")
		return nil, fmt.Errorf("no")
	}, Validate: func(p string) error {
		if strings.Contains(p, "iso") {
			return fmt.Errorf("config: iso needs iso_t")
		}
		return nil
	}})
	if err == nil || !strings.Contains(err.Error(), "run iso: config: iso needs iso_t") {
		t.Errorf("error %v", err)
	}
}

// TestExperimentFiles checks that the shipped sweep files parse and
// expand to the runs their comments promise.
func TestExperimentFiles(t *testing.T) {
	want := map[string]int{"quick.yaml": 9, "criteo.yaml": 8, "avazu.yaml": 8,
		"attacks-vs-defences.yaml": 10, "completion-known-labels.yaml": 8, "grad-match.yaml": 5, "integrity.yaml": 50,
		"defences-1m-tuned-exploit.yaml": 22, "vflip-parties-tied.yaml": 120, "wire.yaml": 21}
	for file, n := range want {
		spec, err := LoadSpec(filepath.Join("..", "experiments", file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		runs, err := spec.Expand()
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if len(runs) != n {
			t.Errorf("%s: %d runs, want %d", file, len(runs), n)
		}
	}
}
