package run

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/rundir"
)

// TestRunFilesOwnerOnly: a run directory that train creates is readable
// by its owner only, and so are its label-derived records, its models and
// its encoding; config.yaml stays readable by all.
func TestRunFilesOwnerOnly(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs = 1
	cfg.Out = filepath.Join(t.TempDir(), "fresh", "run")
	if _, err := Train(context.Background(), cfg, Options{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{".": 0o700, rundir.ConfigFile: 0o644}
	for _, f := range []string{rundir.BatchesFile, rundir.EvalFile, rundir.SummaryFile, rundir.BottomModelFile, rundir.TopModelFile, rundir.EncodingFile} {
		want[f] = 0o600
	}
	for f, mode := range want {
		st, err := os.Stat(filepath.Join(cfg.Out, f))
		if err != nil {
			if f == rundir.EncodingFile && os.IsNotExist(err) {
				continue // a format without a vocabulary
			}
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != mode {
			t.Errorf("%s: mode %v, want %v", f, got, mode)
		}
	}
}

// TestSummaryHasTestAUCInterval: summary.json gives the selected model's
// test AUC with its bootstrap interval, which holds it.
func TestSummaryHasTestAUCInterval(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs = 1
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ci := sum.TestAUCSelectedCI95
	if ci == nil || !(ci[0] <= sum.TestAUCSelected && sum.TestAUCSelected <= ci[1]) || !(ci[0] < ci[1]) {
		t.Fatalf("test AUC %.4f, interval %v", sum.TestAUCSelected, ci)
	}
	back, err := rundir.ReadSummary(cfg.Out)
	if err != nil || back.TestAUCSelectedCI95 == nil || *back.TestAUCSelectedCI95 != *ci {
		t.Fatalf("summary.json's interval %v, returned %v (%v)", back.TestAUCSelectedCI95, *ci, err)
	}
	d := sum.TestAUCMinusBaselineCI95
	if sum.Baseline == nil || sum.Baseline.TestAUC == nil || d == nil {
		t.Fatalf("no paired interval of the difference to the baseline: %v, %+v", d, sum.Baseline)
	}
	if diff := sum.TestAUCSelected - *sum.Baseline.TestAUC; !(d[0] <= diff && diff <= d[1]) || !(d[0] < d[1]) {
		t.Fatalf("difference %.4f, its interval %v", diff, *d)
	}
}
