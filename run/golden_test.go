package run

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/internal/golden"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// TestGoldenRunConfigYAML compares config.yaml as Train writes it, the
// settings left to the data chosen from the training rows (batch,
// epochs, learning rate, evaluation cadence, early stop, selection), with
// testdata/config-run.golden, byte for byte (rewrite it with `go test
// ./run -run Golden -update`). The run directory's path and the engine's
// name, which depend on the machine, are replaced by RUNDIR and ENGINE.
// Package config's goldens cover Marshal; this one the run's resolving
// and writing.
func TestGoldenRunConfigYAML(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.SynthRows, cfg.MaxSteps, cfg.Layers, cfg.Cut = 3000, 3, []int{16, 16}, 1
	cfg.Out = t.TempDir()
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ old, new string }{
		{"# matrix engine: " + tensor.Default.Name() + "\n", "# matrix engine: ENGINE\n"},
		{"out: " + cfg.Out + "\n", "out: RUNDIR\n"},
	} {
		if !bytes.Contains(b, []byte(r.old)) {
			t.Fatalf("no line %q in\n%s", r.old, b)
		}
		b = bytes.Replace(b, []byte(r.old), []byte(r.new), 1)
	}
	golden.Check(t, filepath.Join("testdata", "config-run.golden"), b)
}
