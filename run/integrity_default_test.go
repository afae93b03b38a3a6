package run

import (
	"context"
	"strings"
	"testing"
)

// TestDefaultDetectorsWarnWithoutStopping: with no detector key given,
// the default set runs. Honest runs of three seeds raise no alarm, score
// replay 0 and complete; a replaying and a constant free-rider from step
// 5 raise the replay alarm from step 6 (the second batch of 100 rows it
// sends: the first of each batch size is new) on every later batch but
// the first of the short last batch's size, and the run still completes
// (stopping is key integrity_stop's); the alarm is in the summary's
// integrity_alarms and warnings. Turned off (detectors [none]) it is
// silent.
func TestDefaultDetectorsWarnWithoutStopping(t *testing.T) {
	full := int64(0)
	for _, seed := range []uint64{1, 2, 3} {
		cfg := freeRideConfig(t)
		cfg.Seed = seed
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		s, _ := readSummary(t, cfg.Out)
		if v, ok := s.Integrity["replay"]; !ok || v != 0 || len(s.IntegrityAlarms) > 0 || s.Truncated {
			t.Errorf("honest seed %d: scores %v alarms %v truncated %t", seed, s.Integrity, s.IntegrityAlarms, s.Truncated)
		}
		full = s.Steps
	}
	for _, mode := range []string{"replay", "constant"} {
		cfg := freeRideConfig(t)
		cfg.FreeRide, cfg.FreeRideFrom = mode, 5
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		s, _ := readSummary(t, cfg.Out)
		// batches from step 5 on, less the first of each of the two sizes
		want := int(full - 5 - 2)
		if s.Truncated || s.Steps != full || len(s.IntegrityAlarms) != 1 {
			t.Fatalf("%s: truncated %t steps %d (honest %d) alarms %+v", mode, s.Truncated, s.Steps, full, s.IntegrityAlarms)
		}
		a := s.IntegrityAlarms[0]
		if a.Detector != "replay" || a.FirstStep != 6 || a.Batches != want || a.MaxScore != 1 || a.Threshold != 1 ||
			!strings.Contains(a.Verdict, "stale replay") {
			t.Errorf("%s: alarm %+v, want replay from step 6 on %d batches", mode, a, want)
		}
		if !strings.Contains(strings.Join(s.Warnings, "\n"), "integrity alarm: detector replay") {
			t.Errorf("%s: warnings %q", mode, s.Warnings)
		}

		cfg = freeRideConfig(t)
		cfg.FreeRide, cfg.FreeRideFrom, cfg.Detectors = mode, 5, []string{"none"}
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		if s, _ := readSummary(t, cfg.Out); len(s.Integrity) > 0 || len(s.IntegrityAlarms) > 0 {
			t.Errorf("%s with detectors none: scores %v alarms %v", mode, s.Integrity, s.IntegrityAlarms)
		}
	}
}
