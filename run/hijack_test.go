package run

import (
	"context"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestHijackWatchRefusesFSHA: a malicious active party running FSHA (key
// hijack) is refused by the passive party's watch (key hijack_stop) at
// the first full window of 20 batches — its gradients all lie on one side
// — and the run ends cleanly with the reason in summary.json and FSHA's
// reconstruction scored at the evaluations before; honest runs of three
// seeds with the same watch complete.
func TestHijackWatchRefusesFSHA(t *testing.T) {
	c := freeRideConfig(t)
	c.Hijack, c.HijackStop, c.FeatureAux = config.HijackFSHA, 0.01, 200
	c.EvalEvery = 10
	sum, err := Train(context.Background(), c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.IntegrityAlarm, "hijacking") || sum.Steps != 19 {
		t.Fatalf("alarm %q after %d steps, want the hijacking alarm at step 19", sum.IntegrityAlarm, sum.Steps)
	}
	if _, ok := sum.FeatureLeakFinal["fsha/r2_mean"]; !ok {
		t.Errorf("no FSHA reconstruction figure: %v", sum.FeatureLeakFinal)
	}
	for seed := range uint64(3) {
		h := freeRideConfig(t)
		h.HijackStop, h.Seed = 0.01, seed+1
		sum, err := Train(context.Background(), h, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.IntegrityAlarm != "" || sum.Truncated {
			t.Errorf("honest seed %d: %q", seed+1, sum.IntegrityAlarm)
		}
	}
	bad := freeRideConfig(t)
	bad.Hijack = "unsplit"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "key hijack") {
		t.Errorf("an unknown hijacker: %v", err)
	}
}
