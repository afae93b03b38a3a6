package netrun

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestOverlapNetworkedMatchesInProcess trains with a pipelined schedule
// (staleness k) and local updates (Q) in process and as two parties over
// mutual TLS, and checks that every evaluation, every batch's record and
// the summary agree bit for bit (CELU-VFL's cache and weighting too);
// and that each differs from the exact
// protocol's run (the option took effect). The checkpoints fall on
// evaluation steps, where both modes drain the pipeline. The last case is
// the WAN setting with int4 messages both ways (k = 4, F = 2).
func TestOverlapNetworkedMatchesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains ten runs")
	}
	path := synthFile(t, 900)
	root := t.TempDir()
	exact := smallConfig(path, filepath.Join(root, "exact"))
	if _, err := run.Train(context.Background(), exact, run.Options{}); err != nil {
		t.Fatal(err)
	}
	exactEval := readLines[rundir.EvalRecord](t, filepath.Join(exact.Out, "eval.jsonl"))
	xi := 0.2
	unpredicted := map[[2]int][]rundir.EvalRecord{} // evaluations by k, Q without prediction
	for _, c := range []struct {
		k, q, w int
		xi      *float64 // CELU-VFL's weighting threshold, with w its cache
		f       float64  // linear weight prediction's factor
		enc     string   // wire encoding both ways; "" is f32
	}{{1, 1, 0, nil, 0, ""}, {2, 1, 0, nil, 0, ""}, {0, 2, 0, nil, 0, ""}, {2, 2, 0, nil, 0, ""}, {0, 3, 3, &xi, 0, ""}, {2, 2, 0, nil, 2, ""},
		{4, 1, 0, nil, 2, "int4"}} {
		t.Run(fmt.Sprintf("k%d_Q%d_W%d_F%g%s", c.k, c.q, c.w, c.f, c.enc), func(t *testing.T) {
			dir := filepath.Join(root, fmt.Sprintf("k%d_q%d_w%d_f%g%s", c.k, c.q, c.w, c.f, c.enc))
			base := smallConfig(path, filepath.Join(dir, "inproc"))
			base.Staleness, base.LocalSteps, base.StalenessPrediction = c.k, c.q, c.f
			base.WireEmbedding, base.WireGradient = c.enc, c.enc
			base.LocalCache, base.LocalWeightThreshold = c.w, c.xi
			want, err := run.Train(context.Background(), base, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			act, pas := partyConfigs(base, dir, newTestPKI(t))
			act.CheckpointEvery, pas.CheckpointEvery = 2*base.EvalEvery, 2*base.EvalEvery
			got := pair(t, act, pas)
			ge := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl"))
			we := readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
			if !reflect.DeepEqual(ge, we) || len(we) < 3 {
				t.Fatalf("evaluations differ:\n got %v\nwant %v", ge, we)
			}
			if reflect.DeepEqual(we, exactEval) {
				t.Errorf("the evaluations equal the exact protocol's: staleness %d and %d local steps changed nothing", c.k, c.q)
			}
			key := [2]int{c.k, c.q}
			if c.f == 0 {
				unpredicted[key] = we
			} else if reflect.DeepEqual(we, unpredicted[key]) {
				t.Errorf("the evaluations equal those without prediction: factor %g changed nothing", c.f)
			}
			sameBatches(t, act.Out, base.Out, 1)
			if got.TestAUCFinal != want.TestAUCFinal || got.TrainLossFinal != want.TrainLossFinal || got.Steps != want.Steps {
				t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
			}
			t.Logf("k=%d Q=%d: test AUC %.6f in both modes (exact protocol %.6f); %d steps", c.k, c.q, got.TestAUCFinal, exactEval[len(exactEval)-1].TestAUC, got.Steps)
		})
	}
}
