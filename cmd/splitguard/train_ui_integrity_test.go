package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/ui"
)

// TestLivePageIntegrityScores runs a small training with two detectors,
// feeding its evaluations to a live page's feed as train --ui does, and
// checks the page's integrity series against eval.jsonl read back from
// the run directory: one point per evaluation, the same step and score,
// for each detector; the threshold is on the page.
func TestLivePageIntegrityScores(t *testing.T) {
	c := config.Default()
	c.SynthRows, c.Batch, c.Epochs, c.LR, c.EvalEvery = 2000, 128, 1, 3e-3, 5
	c.Layers, c.Cut, c.Baseline = []int{8, 8, 8}, 2, false
	c.Out = filepath.Join(t.TempDir(), "run")
	c.Detectors, c.IntegrityStop = []string{"norm_shift", "outlier"}, map[string]float64{"outlier": 1e9}
	feed := ui.NewFeed(ui.Info{Title: c.Out, IntegrityStop: c.IntegrityStop})
	if _, err := run.Train(context.Background(), c, run.Options{OnEval: func(r rundir.EvalRecord) { feed.Eval(uiEval(r)) }}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(c.Out, rundir.EvalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string][][2]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	evals := 0
	for sc.Scan() {
		var e rundir.EvalRecord
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		evals++
		for k, v := range e.Integrity {
			want[k] = append(want[k], [2]float64{float64(e.Step), v})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	st := feed.Snapshot()
	if !slices.Equal(st.IntegrityKeys, []string{"norm_shift", "outlier"}) {
		t.Fatalf("the page's detectors %v, want norm_shift and outlier", st.IntegrityKeys)
	}
	for _, k := range st.IntegrityKeys {
		if len(want[k]) < 2 {
			t.Errorf("%s: %d scored evaluations of %d in eval.jsonl, want several", k, len(want[k]), evals)
		}
		if !slices.Equal(st.Integrity[k], want[k]) {
			t.Errorf("%s on the page %v, in eval.jsonl %v", k, st.Integrity[k], want[k])
		}
	}
	if st.Info.IntegrityStop["outlier"] != 1e9 {
		t.Errorf("the page's thresholds %v", st.Info.IntegrityStop)
	}
}
