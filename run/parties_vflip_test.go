package run

import (
	"context"
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
