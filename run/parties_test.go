package run

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// partiesConfig is a small two-passive run on synthetic Criteo-shaped
// data: party "inf" holds the label-bearing columns of the generator
// (data/synth.go's tilted groups), party "noise" columns drawn the same
// for both classes; the MLP's active party reads no column of its own.
func partiesConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.SynthRows, c.Batch, c.Epochs, c.LR, c.EvalEvery = 12000, 256, 2, 3e-3, 20
	c.Model, c.Layers, c.Cut, c.Baseline = "mlp", []int{16, 8, 8}, 2, false
	c.Attacks = []string{"norm", "cosine"}
	c.Contribution = true
	c.Parties = []config.Party{
		{Name: "inf", Columns: []string{"C1", "C2", "C5", "C8", "C11"}},
		{Name: "noise", Columns: []string{"C3", "C4", "C6", "C7", "C10"}},
	}
	c.Out = t.TempDir()
	return c
}

// TestPartiesRecordEachParty runs two passive parties, one informative
// and one noise, and checks the per-party records: every batch's leak
// for each party and the colluding pair, the leave-one-party-out
// contributions (the informative party's larger), each party's bottom.
func TestPartiesRecordEachParty(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two passive parties")
	}
	cfg := partiesConfig(t)
	s, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"inf", "noise", "inf+noise"} {
		p, ok := s.Parties[name]
		if !ok || len(p.Leak) == 0 {
			t.Fatalf("summary has no figures of %s: %+v", name, s.Parties)
		}
	}
	inf, noise := s.Parties["inf"], s.Parties["noise"]
	if inf.GainSelected == nil || noise.GainSelected == nil {
		t.Fatalf("no leave-one-party-out gain: %+v %+v", inf, noise)
	}
	t.Logf("selected val AUC %.4f; gain of inf %.4f, of noise %.4f", *s.ValAUCSelected, *inf.GainSelected, *noise.GainSelected)
	if !(*inf.GainSelected > *noise.GainSelected+0.02) {
		t.Errorf("the informative party's gain %.4f is not clearly above the noise party's %.4f", *inf.GainSelected, *noise.GainSelected)
	}
	lines := readLines(t, filepath.Join(cfg.Out, rundir.BatchesFile))
	for _, l := range lines[:3] {
		parties, ok := l["parties"].(map[string]any)
		if !ok || len(parties) != 3 {
			t.Fatalf("batch record without the three audited views: %v", l)
		}
		for name, v := range parties {
			leak := v.(map[string]any)
			if _, ok := leak["norm/cut"]; !ok {
				t.Fatalf("%s's leak has no norm/cut: %v", name, leak)
			}
		}
	}
	for _, f := range []string{rundir.BottomModelFile, PartyBottomFile("noise"), rundir.TopModelFile} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
	if math.IsNaN(s.TestAUCSelected) || s.TestAUCSelected < 0.6 {
		t.Errorf("test AUC %.4f", s.TestAUCSelected)
	}
}
