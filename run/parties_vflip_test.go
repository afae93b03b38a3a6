package run

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
)

// TestPartiesVflipScoresEachParty runs the cross-party detector in a run
// of three honest passive parties (synthetic Criteo, the columns split
// by synth_parties): the summary holds the detector's largest score and
// one per party, and a one-passive run refuses the detector.
func TestPartiesVflipScoresEachParty(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three passive parties")
	}
	cfg := partiesConfig(t)
	cfg.SynthRows, cfg.Epochs, cfg.Attacks, cfg.Contribution = 6000, 1, []string{"norm"}, false
	cfg.Model, cfg.Parties, cfg.SynthParties = "wdl", nil, 3
	cfg.Detectors = []string{"vflip"}
	s, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("integrity maxima: %v", s.Integrity)
	for _, k := range []string{"vflip", "vflip/p1", "vflip/p2", "vflip/p3"} {
		if _, ok := s.Integrity[k]; !ok {
			t.Errorf("summary integrity %v has no %s", s.Integrity, k)
		}
	}
	one := config.Default()
	one.Detectors = []string{"vflip"}
	if err := one.Validate(); err == nil || !strings.Contains(err.Error(), "needs at least two passive parties") {
		t.Errorf("vflip in a one-passive run: %v", err)
	}
}

var vflipSeeds = flag.Int("vflip-seeds", 0, "honest three-party runs of TestVflipHonestMaxima (0: skipped)")

// TestVflipHonestMaxima measures the cross-party detector's largest score
// over honest three-passive runs (synthetic Criteo, 20,000 rows, two
// epochs, Wide&Deep, the columns split by synth_parties), one per seed:
// the figure a threshold (integrity_stop: {vflip: T}) must stay above.
// Run with -vflip-seeds N.
func TestVflipHonestMaxima(t *testing.T) {
	if *vflipSeeds == 0 {
		t.Skip("measurement: -vflip-seeds N")
	}
	var maxima []float64
	for seed := range *vflipSeeds {
		cfg := partiesConfig(t)
		cfg.SynthRows, cfg.Epochs, cfg.Attacks, cfg.Contribution = 20000, 2, []string{"norm"}, false
		cfg.Model, cfg.Parties, cfg.SynthParties, cfg.Seed = "wdl", nil, 3, uint64(seed+1)
		cfg.Detectors = []string{"vflip"}
		s, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		maxima = append(maxima, s.Integrity["vflip"])
		t.Logf("seed %d: test AUC %.4f, largest scores %v", seed+1, s.TestAUCFinal, s.Integrity)
	}
	slices.Sort(maxima)
	t.Logf("vflip's largest score over %d honest runs: median %.3f, largest %.3f", len(maxima), maxima[len(maxima)/2], maxima[len(maxima)-1])
}
