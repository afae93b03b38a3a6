package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackFeatures trains a small in-process run whose passive party
// holds every column (the active none: an MLP top), with the linear
// feature attack at every evaluation, then attacks its saved bottom
// offline as the in-process run and as the passive party auditing itself
// (--passive, no label, no active column): both give the run's figures at
// its last (selected) evaluation.
func TestAttackFeatures(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	if _, err := runCLI(t, "data", "synth", "--rows", "4000", "--out", data); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for i := 1; i <= 13; i++ {
		cols = append(cols, fmt.Sprintf("I%d", i))
	}
	for i := 1; i <= 26; i++ {
		cols = append(cols, fmt.Sprintf("C%d", i))
	}
	run := filepath.Join(dir, "run")
	if out, err := runCLI(t, "train", "--data", data, "--out", run, "--model", "mlp", "--layers", "16,16,8", "--cut", "2", "--embed-dim", "2",
		"--batch", "128", "--lr", "3e-3", "--epochs", "1", "--hash-buckets", "1000", "--select", "last",
		"--passive-columns", strings.Join(cols, ","), "--feature-attacks", "inverse_linear", "--feature-aux", "300"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Sel map[string]float64 `json:"feature_leak_selected"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Sel) == 0 {
		t.Fatal("no feature_leak_selected in summary.json")
	}
	for _, args := range [][]string{
		{"attack", "features", "--run", run, "--feature-aux", "300"},
		{"attack", "features", "--run", run, "--feature-aux", "300", "--passive"},
	} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		var line struct {
			Features map[string]float64 `json:"features"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &line); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(line.Features) != len(sum.Sel) {
			t.Errorf("%v: %d figures, the run %d", args, len(line.Features), len(sum.Sel))
		}
		for k, v := range sum.Sel {
			if math.Abs(line.Features[k]-v) > 1e-9 {
				t.Errorf("%v: %s = %g, the run's %g", args, k, line.Features[k], v)
			}
		}
	}
	for _, bad := range [][]string{
		{"attack", "features"},
		{"attack", "features", "--run", run, "--feature-aux", "1"},
		{"attack", "features", "--run", run, "--feature-attacks", "nope"},
	} {
		if out, err := runCLI(t, bad...); err == nil {
			t.Errorf("%v: accepted\n%s", bad, out)
		}
	}
}
