package netrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestSelectionAndEarlyStopAsInProcess: with select: best and early
// stopping, a two-process run keeps the model of the evaluation with the
// best validation AUC and stops early exactly as the in-process run does
// (the active party tells the passive in its answer to each evaluation
// round): the same batches and evaluations, the same selected step and
// early stop in summary.json, and the same bytes in bottom.model and
// top.model. So does a run whose passive is killed after a checkpoint and
// restarted (the kept models travel in the checkpoints). Before this
// test, a two-process run refused both settings and kept the last model.
func TestSelectionAndEarlyStopAsInProcess(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm"}
	base.Select, base.EarlyStop, base.EvalEvery, base.Epochs, base.LR = config.SelectBest, 3, 2, 4, 0.01
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	planned := int64(base.Epochs) * int64((want.TrainRows+base.Batch-1)/base.Batch)
	if !want.EarlyStopped || want.Steps >= planned || want.SelectedStep >= want.Steps {
		t.Fatalf("the in-process run does not exercise the test: early stopped %v after %d of %d steps, selected step %d",
			want.EarlyStopped, want.Steps, planned, want.SelectedStep)
	}
	t.Logf("in process: stopped after %d of %d steps, kept step %d (validation AUC %.4f)", want.Steps, planned, want.SelectedStep, *want.ValAUCSelected)
	for _, killed := range []bool{false, true} {
		name := map[bool]string{false: "uninterrupted", true: "passive killed after step 5"}[killed]
		t.Run(name, func(t *testing.T) {
			var act, pas Config
			if killed {
				r := startFault(t, base, filepath.Join(root, "killed"))
				killRestartAndEnd(t, r, 5)
				r.sameAsReference(base.Out)
				act, pas = r.act, r.pas
			} else {
				act, pas = partyConfigs(base, filepath.Join(root, "pair"), newTestPKI(t))
				pair(t, act, pas)
				(&faultRun{t: t, act: act}).sameAsReference(base.Out)
			}
			got, err := rundir.ReadSummary(act.Out)
			if err != nil {
				t.Fatal(err)
			}
			sameSelection(t, got, want)
			// Issue 29's done-when: the kept model is within 0.01 of the
			// best validation AUC of the active's own evaluation log.
			if best := bestValAUC(t, act.Out); got.ValAUCSelected == nil || *got.ValAUCSelected < best-0.01 {
				t.Errorf("kept validation AUC %v, the log's best %.4f", got.ValAUCSelected, best)
			}
			sameModelFile(t, pas.Out, base.Out, rundir.BottomModelFile)
			sameModelFile(t, act.Out, base.Out, rundir.TopModelFile)
		})
	}
}

// bestValAUC returns the largest validation AUC of dir's eval.jsonl.
func bestValAUC(t *testing.T, dir string) float64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, rundir.EvalFile))
	if err != nil {
		t.Fatal(err)
	}
	best, n := math.Inf(-1), 0
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var e struct {
			ValAUC *float64 `json:"val_auc"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %v", rundir.EvalFile, err)
		}
		if e.ValAUC != nil {
			best, n = math.Max(best, *e.ValAUC), n+1
		}
	}
	if n < 2 {
		t.Fatalf("%s: %d evaluations with a validation AUC, want several", rundir.EvalFile, n)
	}
	return best
}

// TestThreePartiesSelectionAsInProcess: with several passive parties,
// select: best and early stopping, the active keeps the top of the same
// evaluation and stops after the same step as the in-process run: the
// same summary fields and the same bytes in top.model.
func TestThreePartiesSelectionAsInProcess(t *testing.T) {
	root := t.TempDir()
	base := threePartyBase(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Select, base.EarlyStop, base.EvalEvery, base.Epochs, base.LR = config.SelectBest, 3, 2, 4, 0.01
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !want.EarlyStopped || want.SelectedStep >= want.Steps {
		t.Fatalf("the in-process run does not exercise the test: early stopped %v after %d steps, selected step %d",
			want.EarlyStopped, want.Steps, want.SelectedStep)
	}
	act, pas := threePartyConfigs(base, filepath.Join(root, "net"), "")
	got, perrs, err := runThree(t, act, pas)
	if err != nil || errors.Join(perrs...) != nil {
		t.Fatalf("active: %v; passives: %v", err, perrs)
	}
	sameSelection(t, got, want)
	sameModelFile(t, act.Out, base.Out, rundir.TopModelFile)
}

// sameSelection checks that a networked run's summary got stopped early
// and selected as the in-process run's want did.
func sameSelection(t *testing.T, got, want *rundir.Summary) {
	t.Helper()
	if got.EarlyStopped != want.EarlyStopped || got.Steps != want.Steps || got.SelectedStep != want.SelectedStep ||
		got.Select != want.Select || got.TestAUCSelected != want.TestAUCSelected {
		t.Errorf("summary: early stopped %v after %d steps, select %s, kept step %d (test AUC %v); in process %v, %d, %s, %d (%v)",
			got.EarlyStopped, got.Steps, got.Select, got.SelectedStep, got.TestAUCSelected,
			want.EarlyStopped, want.Steps, want.Select, want.SelectedStep, want.TestAUCSelected)
	}
}

// sameModelFile checks that model file file in dir holds the bytes of the
// one in wantDir.
func sameModelFile(t *testing.T, dir, wantDir, file string) {
	t.Helper()
	g, err1 := os.ReadFile(filepath.Join(dir, file))
	w, err2 := os.ReadFile(filepath.Join(wantDir, file))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s differs from the in-process run's (%d and %d bytes)", file, len(g), len(w))
	}
}
