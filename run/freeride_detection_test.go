package run

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/metrics"
)

// contributionScore names the leave-the-passive-out figure among the
// detectors' scores: minus the passive's gain at the last evaluation
// (validation AUC with its embedding less without it), so that, like a
// detector's, a larger score is more suspect.
const contributionScore = "contribution (−passive gain)"

// detectorScores trains n seeds of the backdoor tests' signal table (the
// passive's columns carry most of the label) with every registered
// detector and the contribution figure on, cheat applied to each
// configuration, and returns each detector's largest score per run and
// the contribution score per run.
func detectorScores(t *testing.T, n int, cheat func(*config.Config)) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for seed := range n {
		cfg := backdoorConfig(t, 3000, 21)
		cfg.Seed = uint64(100 + seed)
		cfg.Detectors = slices.DeleteFunc(integrity.DetectorNames(), integrity.IsCrossParty) // one passive party
		cfg.Contribution = true
		cheat(&cfg)
		sum, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range cfg.Detectors {
			out[d] = append(out[d], sum.Integrity[d])
		}
		if sum.PassiveGainFinal == nil {
			t.Fatalf("seed %d: no passive gain in the summary", seed)
		}
		out[contributionScore] = append(out[contributionScore], -*sum.PassiveGainFinal)
	}
	return out
}

// TestFreeRideDetectionAUC measures each detector's AUC of free-riding
// against honest runs, per free-riding mode (noise, constant, replay from
// step 24 of 96), over -detection-seeds N honest and N free-riding seeds
// (20 for the table of docs/methods/integrity.md: -run
// TestFreeRideDetectionAUC -detection-seeds 20 -v). Checked: the replay
// detector separates replaying runs completely (its score is exact), and
// the contribution figure separates every mode (the free-rider's
// embedding carries nothing, so leaving it out costs the joint model
// nothing, while the honest passive's columns carry most of the label).
func TestFreeRideDetectionAUC(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 × seeds runs")
	}
	n := *detectionSeeds
	honest := detectorScores(t, n, func(*config.Config) {})
	labels := append(make([]uint8, n), slices.Repeat([]uint8{1}, n)...)
	for _, mode := range integrity.TamperNames() {
		cheating := detectorScores(t, n, func(c *config.Config) { c.FreeRide, c.FreeRideFrom = mode, 24 })
		auc := map[string]float64{}
		for _, d := range slices.Sorted(maps.Keys(honest)) {
			s := append(slices.Clone(honest[d]), cheating[d]...)
			a, ok := metrics.AUC(s, labels, nil)
			if !ok {
				t.Fatalf("%s %s: no AUC", mode, d)
			}
			auc[d] = a
			top := slices.Max(honest[d])
			caught := 0
			for _, v := range cheating[d] {
				if v > top {
					caught++
				}
			}
			t.Logf("free_ride %s, %s: AUC %.3f; %d of %d free-riding runs above every honest one (%.3g); honest %s; free-riding %s",
				mode, d, a, caught, n, top, fmtScores(honest[d]), fmtScores(cheating[d]))
		}
		if auc[contributionScore] < 0.99 {
			t.Errorf("free_ride %s: the contribution figure's AUC %.3f, want 1 (the free-rider adds nothing)", mode, auc[contributionScore])
		}
		if mode == "replay" && auc["replay"] < 0.99 {
			t.Errorf("free_ride replay: the replay detector's AUC %.3f, want 1", auc["replay"])
		}
	}
}
