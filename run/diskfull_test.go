package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/atomicfile/atomicfiletest"
	"github.com/splitguard/splitguard/rundir"
)

// TestDiskFullKeepsModelAndSummary: the disk fills up after the first
// evaluation; the run ends with an error saying so, the models (the same
// size as an uninterrupted run's, and loadable) and a summary marked
// truncated with the reason. Before, a full disk lost both.
func TestDiskFullKeepsModelAndSummary(t *testing.T) {
	disk := atomicfiletest.SmallDisk(t, "16m")
	ref := smallConfig(t)
	if _, err := Train(context.Background(), ref, Options{}); err != nil {
		t.Fatal(err)
	}
	cfg := ref
	cfg.Out = filepath.Join(disk, "run")
	filled := false
	_, err := Train(context.Background(), cfg, Options{OnEval: func(rundir.EvalRecord) {
		if !filled {
			filled = true
			if err := atomicfiletest.Fill(filepath.Join(disk, "filler")); err != nil {
				t.Error(err)
			}
		}
	}})
	if !atomicfile.IsDiskFull(err) || !strings.Contains(err.Error(), "summary marked truncated are saved") {
		t.Fatalf("Train on a full disk: %v", err)
	}
	for _, f := range []string{rundir.BottomModelFile, rundir.TopModelFile} {
		got, err := os.ReadFile(filepath.Join(cfg.Out, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(ref.Out, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (the complete run's: %d), equal to the complete run's: %v", f, len(got), len(want), bytes.Equal(got, want))
		}
	}
	b, err := os.ReadFile(filepath.Join(cfg.Out, rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s rundir.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if !s.Truncated || !strings.Contains(s.TruncatedReason, "the disk filled up") || s.Steps == 0 {
		t.Fatalf("summary: truncated %v, reason %q, steps %d", s.Truncated, s.TruncatedReason, s.Steps)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, rundir.ConfigFile)); errors.Is(err, os.ErrNotExist) {
		t.Error("config.yaml is gone")
	}
}
