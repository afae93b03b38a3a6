package netrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/run"
)

// TestCELUKilledPassiveResumes kills the passive party of a CELU-VFL run
// (three local steps per exchange, a workset of three batches, weighting
// threshold 0.2) right after its checkpoint of step 10 and restarts it:
// both parties resume from their checkpoints, workset included, and every
// evaluation and batch record equals the uninterrupted in-process run's.
// Without the workset in the checkpoints the resumed local updates would
// draw on an empty cache and the records would differ.
func TestCELUKilledPassiveResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("two two-party runs")
	}
	root := t.TempDir()
	base := smallConfig(synthFile(t, faultRows), filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm", "cosine"}
	xi := 0.2
	base.LocalSteps, base.LocalCache, base.LocalWeightThreshold = 3, 3, &xi
	if _, err := run.Train(context.Background(), base, run.Options{}); err != nil {
		t.Fatal(err)
	}
	killAndResume(t, startFault(t, base, filepath.Join(root, "net")), base.Out)
}

// killAndResume kills r's passive party right after its checkpoint of
// step 10, restarts it, and checks that a party resumed and that the run
// ends identical to the in-process run in ref.
func killAndResume(t *testing.T, r *faultRun, ref string) {
	t.Helper()
	killRestartAndEnd(t, r, 10)
	if log := r.logText(); !strings.Contains(log, "msg=resuming") {
		t.Fatalf("no party resumed:\n%s", log)
	}
	r.sameAsReference(ref)
}
