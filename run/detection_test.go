package run

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/metrics"
)

var detectionSeeds = flag.Int("detection-seeds", 4, "honest and cheating seeds per attack of TestBackdoorDetectionAUC (the issue's figure: 20)")

// detectionAUC runs n honest and n cheating seeds of cfg's table (attack
// from step from) with every registered detector, and returns each
// detector's AUC of cheating against honest by the run's largest score
// (summary.json integrity), with the attack success rates of the cheating
// runs.
func detectionAUC(t *testing.T, attack string, from int64, trigger float64, n int) (map[string]float64, []float64) {
	t.Helper()
	dets := slices.DeleteFunc(integrity.DetectorNames(), integrity.IsCrossParty) // one passive party
	scores := map[string][]float64{}
	var labels []uint8
	var asr []float64
	for _, cheat := range []bool{false, true} {
		for seed := range n {
			cfg := backdoorConfig(t, 3000, 21)
			cfg.Seed = uint64(100 + seed)
			cfg.Detectors = dets
			if cheat {
				cfg.Backdoor, cfg.BackdoorFrom, cfg.BackdoorTrigger = attack, from, trigger
			}
			sum, err := Train(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dets {
				scores[d] = append(scores[d], sum.Integrity[d])
			}
			var y uint8
			if cheat {
				y = 1
				asr = append(asr, sum.Backdoor.ASR)
			}
			labels = append(labels, y)
		}
	}
	out := map[string]float64{}
	for _, d := range dets {
		auc, ok := metrics.AUC(scores[d], labels, nil)
		if !ok {
			t.Fatalf("%s: no AUC", d)
		}
		out[d] = auc
		// The share of cheating runs caught by a threshold just above every
		// honest run's largest score (no false alarm on these runs).
		top := slices.Max(scores[d][:n])
		caught := 0
		for _, v := range scores[d][n:] {
			if v > top {
				caught++
			}
		}
		t.Logf("%s %s: honest %v, cheating %v; %d of %d cheating runs above every honest one (%.3g)",
			attack, d, fmtScores(scores[d][:n]), fmtScores(scores[d][n:]), caught, n, top)
	}
	return out, asr
}

func fmtScores(s []float64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprintf("%.3g", v)
	}
	return strings.Join(parts, " ")
}

// TestBackdoorDetectionAUC measures each detector's AUC of honest against
// cheating runs (-detection-seeds N of each; 20 for the table of
// docs/methods/integrity.md, run with -run TestBackdoorDetectionAUC
// -detection-seeds 20 -v). The outlier_peak detector must separate
// gradient replacement's runs from the honest ones (AUC ≥ 0.9) when its
// trigger writes 3, outside the [0, 1] the numeric columns are scaled to
// (the trigger before 2026-11-27); with the default trigger, values the
// columns take (1, 0), no detector separates them (integrity.md §10), and
// the test checks only that the attack then succeeds (median success ≥
// 0.75). VILLAIN's figures are logged only: since 2026-11-27 it swaps
// embeddings only until its 1% poison budget is found and its trigger is
// β = 0.4 standard deviations (integrity.md §10b), and no detector
// separates its runs here (outlier 0.50 over 4 seeds; before, swapping
// 100 rows of every batch and β = 3, outlier ≥ 0.75).
func TestBackdoorDetectionAUC(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 6 × seeds runs")
	}
	for _, tc := range []struct {
		attack    string
		from      int64
		trigger   float64
		detector  string
		minAUC    float64
		minMedASR float64
	}{
		{"gradient_replacement", 24, 3, "outlier_peak", 0.9, 0},
		{"gradient_replacement", 24, 0, "", 0, 0.75},
		{"villain", 24, 0, "", 0, 0},
	} {
		auc, asr := detectionAUC(t, tc.attack, tc.from, tc.trigger, *detectionSeeds)
		for _, d := range slices.Sorted(maps.Keys(auc)) {
			t.Logf("%s (trigger %g): detector %s AUC %.3f (attack success rates %s)", tc.attack, tc.trigger, d, auc[d], fmtScores(asr))
		}
		if d, want := tc.detector, tc.minAUC; d != "" && auc[d] < want {
			t.Errorf("%s (trigger %g): %s detector AUC %.3f, want ≥ %g", tc.attack, tc.trigger, d, auc[d], want)
		}
		sorted := slices.Sorted(slices.Values(asr))
		if med := sorted[len(sorted)/2]; med < tc.minMedASR {
			t.Errorf("%s (trigger %g): median attack success rate %.3f, want ≥ %g", tc.attack, tc.trigger, med, tc.minMedASR)
		}
	}
}
