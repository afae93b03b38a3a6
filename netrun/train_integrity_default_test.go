package netrun

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/run"
)

// TestDefaultAlarmAsInProcess: with no detector key, a constant
// free-rider from step 9 raises the default replay alarm over mutual TLS
// at the same first step, on as many batches and with the same verdict
// as in process, and both runs complete (an alarm does not stop them).
func TestDefaultAlarmAsInProcess(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "inproc"))
	base.Protect, base.Params, base.Attacks = "none", nil, []string{"norm"}
	base.FreeRide, base.FreeRideFrom = "constant", 9
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want.Truncated || len(want.IntegrityAlarms) != 1 || want.IntegrityAlarms[0].Detector != "replay" || want.IntegrityAlarms[0].FirstStep <= 9 {
		t.Fatalf("in process: truncated %t alarms %+v, want the replay alarm after step 9", want.Truncated, want.IntegrityAlarms)
	}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.FreeRide, act.FreeRideFrom = "", 0 // each party holds its own side
	got := pair(t, act, pas)
	if got.Truncated || got.Steps != want.Steps || !reflect.DeepEqual(got.IntegrityAlarms, want.IntegrityAlarms) ||
		!reflect.DeepEqual(got.Integrity, want.Integrity) {
		t.Fatalf("summaries differ:\n got steps %d alarms %+v scores %v\nwant steps %d alarms %+v scores %v",
			got.Steps, got.IntegrityAlarms, got.Integrity, want.Steps, want.IntegrityAlarms, want.Integrity)
	}
}
