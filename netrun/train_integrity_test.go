package netrun

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestFreeRiderStoppedAsInProcess: a passive party replaying from step 9
// is stopped by the active party's replay detector over mutual TLS at
// the same step, with the same evaluations (its gain and the detectors'
// scores included) and the same reason as in process; the active party
// ends cleanly with its top model saved, the passive with the refusal.
func TestFreeRiderStoppedAsInProcess(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "inproc"))
	base.Protect, base.Params, base.Attacks = "none", nil, []string{"norm"}
	base.FreeRide, base.FreeRideFrom = "replay", 9
	base.Detectors, base.IntegrityStop, base.Contribution = []string{"replay", "collapse"}, map[string]float64{"replay": 1}, true
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The first replayed batch: the first after step 9 whose size (64,
	// or the short last batch of an epoch) was sent at or after step 9.
	size := func(s int) int {
		per := (want.TrainRows + 63) / 64
		if s%per == per-1 && want.TrainRows%64 != 0 {
			return want.TrainRows % 64
		}
		return 64
	}
	first := 10
	for ; ; first++ {
		seen := false
		for s := 9; s < first; s++ {
			seen = seen || size(s) == size(first)
		}
		if seen {
			break
		}
	}
	if want.Steps != int64(first) || !strings.Contains(want.IntegrityAlarm, "replay") {
		t.Fatalf("in process: %d steps, alarm %q; want the alarm at step %d", want.Steps, want.IntegrityAlarm, first)
	}

	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.FreeRide, act.FreeRideFrom = "", 0 // each party holds its own side
	pas.Detectors, pas.IntegrityStop, pas.Contribution = nil, nil, false
	got, perr := pairStopped(t, act, pas)
	if perr == nil || !strings.Contains(perr.Error(), "aborted") {
		t.Errorf("passive: error %v, want the active party's abort (its reason stays in the active's log)", perr)
	}
	if got.Steps != want.Steps || got.IntegrityAlarm != want.IntegrityAlarm || !got.Truncated || got.TruncatedReason != want.TruncatedReason ||
		!reflect.DeepEqual(got.Integrity, want.Integrity) {
		t.Fatalf("summaries differ:\n got steps %d alarm %q reason %q scores %v\nwant steps %d alarm %q reason %q scores %v",
			got.Steps, got.IntegrityAlarm, got.TruncatedReason, got.Integrity, want.Steps, want.IntegrityAlarm, want.TruncatedReason, want.Integrity)
	}
	g, w := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
	if !reflect.DeepEqual(g, w) || len(w) != 1 || w[0].PassiveGain == nil || w[0].Integrity == nil {
		t.Fatalf("evaluations differ or lack the integrity figures:\n got %+v\nwant %+v", g, w)
	}
	if _, err := os.Stat(filepath.Join(act.Out, rundir.TopModelFile)); err != nil {
		t.Error(err)
	}
}

// pairStopped runs both parties over mutual TLS on loopback, the active
// party expected to end the run cleanly (an integrity alarm): its summary
// and the passive party's error.
func pairStopped(t *testing.T, act, pas Config) (*rundir.Summary, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wait func() (*rundir.Summary, error)
	pas.Addr, wait = startActive(t, ctx, act)
	_, perr := RunPassive(ctx, pas, Options{Logger: testLogger(t)})
	s, err := wait()
	if err != nil {
		t.Fatalf("active: the alarm should end the run cleanly: %v", err)
	}
	return s, perr
}
