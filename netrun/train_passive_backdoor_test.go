package netrun

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// backdoorBase is a small Criteo-shaped run whose passive party holds
// I1…I13 and C1…C3, with the outlier_peak detector on.
func backdoorBase(t *testing.T, out string) config.Config {
	base := smallConfig(synthFile(t, 1500), out)
	base.Protect, base.Params, base.Attacks = "none", nil, []string{"norm"}
	base.PassiveColumns = append(criteoNames("I", 1, 13), criteoNames("C", 1, 3)...)
	base.Epochs, base.LR = 3, 1e-2
	base.Detectors = []string{"outlier", "outlier_peak"}
	base.BackdoorTarget = 1
	return base
}

// backdoorStop is the outlier_peak threshold of the test: on this table
// the honest run's largest score is 2.31 and gradient replacement's 3.62.
const backdoorStop = 3.2

// TestBackdoorStoppedAsInProcess: a passive party planting gradient
// replacement's backdoor over mutual TLS, told of the known target rows
// by their IDs, is stopped by the active party's outlier_peak detector at
// the same step, with the same evaluations, scores and reason as in
// process; the honest run with the same threshold completes.
func TestBackdoorStoppedAsInProcess(t *testing.T) {
	root := t.TempDir()
	honest := backdoorBase(t, filepath.Join(root, "honest"))
	honest.IntegrityStop = map[string]float64{"outlier_peak": backdoorStop}
	h, err := run.Train(context.Background(), honest, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Truncated || h.IntegrityAlarm != "" {
		t.Fatalf("honest run: truncated %t, alarm %q (scores %v)", h.Truncated, h.IntegrityAlarm, h.Integrity)
	}

	base := backdoorBase(t, filepath.Join(root, "inproc"))
	base.IntegrityStop = map[string]float64{"outlier_peak": backdoorStop}
	base.Backdoor = "gradient_replacement"
	// A trigger outside the scaled range, which outlier_peak sees (one
	// inside it, the default, no detector sees: integrity.md §10).
	base.BackdoorTrigger = 3
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.IntegrityAlarm, "outlier_peak") || want.Backdoor == nil || want.Steps >= h.Steps {
		t.Fatalf("in process: %d steps of %d, alarm %q, backdoor %+v", want.Steps, h.Steps, want.IntegrityAlarm, want.Backdoor)
	}

	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.Backdoor = "" // each party holds its own side
	pas.Detectors, pas.IntegrityStop = nil, nil
	pas.BackdoorKnownIDs = want.Backdoor.KnownIDs
	got, perr := pairStopped(t, act, pas)
	if perr == nil || !strings.Contains(perr.Error(), "aborted") {
		t.Errorf("passive: error %v, want the active party's abort", perr)
	}
	if got.Steps != want.Steps || got.IntegrityAlarm != want.IntegrityAlarm || got.TruncatedReason != want.TruncatedReason ||
		!reflect.DeepEqual(got.Integrity, want.Integrity) {
		t.Fatalf("summaries differ:\n got steps %d alarm %q reason %q scores %v\nwant steps %d alarm %q reason %q scores %v",
			got.Steps, got.IntegrityAlarm, got.TruncatedReason, got.Integrity, want.Steps, want.IntegrityAlarm, want.TruncatedReason, want.Integrity)
	}
	g, w := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("evaluations differ:\n got %+v\nwant %+v", g, w)
	}
}

// TestNetworkedBackdoorNeedsKnownIDs: a networked passive party cannot
// draw the known rows (it holds no label) and says which key to set.
func TestNetworkedBackdoorNeedsKnownIDs(t *testing.T) {
	root := t.TempDir()
	base := backdoorBase(t, filepath.Join(root, "inproc"))
	base.Backdoor = "villain"
	_, pas := partyConfigs(base, root, "")
	pas.InsecureLoopback, pas.Addr = true, "127.0.0.1:1"
	pas.PeerTimeout = time.Second
	_, err := RunPassive(context.Background(), pas, Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "backdoor_known_ids") {
		t.Errorf("error %v, want one naming key backdoor_known_ids", err)
	}
}
