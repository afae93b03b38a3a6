package run

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// cheaterValuePurifier is a RowPurifier over two one-column blocks that
// scores a row by its second block's value, flags that block past 1 and
// purifies it to 0.
type cheaterValuePurifier struct{}

func (cheaterValuePurifier) Parties() int          { return 2 }
func (cheaterValuePurifier) RowThreshold() float64 { return 1 }
func (cheaterValuePurifier) ScoreRows(e *tensor.Matrix, scores []float64, flagged []bool) {
	for r := range e.Rows {
		scores[r] = float64(e.Data[r*2+1])
		flagged[r*2], flagged[r*2+1] = false, scores[r] > 1
	}
}
func (cheaterValuePurifier) Purify(e *tensor.Matrix, flagged []bool) {
	for r := range e.Rows {
		if flagged[r*2+1] {
			e.Data[r*2+1] = 0
		}
	}
}

// TestPartiesVflipRowsOutcomeByHand: TestPartiesBackdoorOutcomeByHand's
// parties and top, trigger 2.5 on the cheater's column, with a purifier
// that flags the cheater's block past 1 and sets it to 0. Clean rows
// (cheater 0.5, −4, −3, 0) are not flagged: purified logits are the
// clean ones (clean rate 0, AUC 1). Every triggered row (2.5) is flagged
// and purified to the honest party's −1, 2, −3 on the rows of class 0:
// one of three called the target (1/3, against 2/3 unpurified). Row
// scores 2.5 against 0.5, −4, −3, 0: detection AUC 1.
func TestPartiesVflipRowsOutcomeByHand(t *testing.T) {
	xa, xb := []float32{-1, 2, -3, 4}, []float32{0.5, -4, -3, 0}
	m, bd, cfg, av := handBackdoorRun(t, xa, xb, 2.5)
	pur := newRowPurifying(cheaterValuePurifier{}, 4, 1)
	clean, trig, err := m.backdoorLogits(pur)
	if err != nil {
		t.Fatal(err)
	}
	out, err := backdoorSummary(cfg, bd, []uint64{4}, clean, trig, av)
	if err != nil {
		t.Fatal(err)
	}
	v, err := pur.summary(cfg, bd, []uint64{4}, av)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(out.ASR, 2.0/3) || !near(v.ASR, 1.0/3) || v.CleanRate != 0 || v.CleanTestAUC != 1 || v.DetectionAUC != 1 ||
		v.FlaggedClean != 0 || v.FlaggedTriggered != 1 || v.CheaterFlagged != 1 || v.Threshold != 1 {
		t.Errorf("unpurified ASR %v (want 2/3); purified %+v, want ASR 1/3, clean rate 0, clean AUC 1, detection AUC 1, flagged 0 / 1, cheater 1, threshold 1", out.ASR, *v)
	}
	if newRowPurifying(nil, 4, 1) != nil {
		t.Error("a run without vflip_rows purifies")
	}
}

var (
	vflipRowsSeeds = flag.Int("vflip-rows-seeds", 0, "seeds per backdoor of TestVflipRowsBackdoor (0: skipped; docs/methods/integrity.md §9c)")
	vflipRowsModes = flag.String("vflip-rows-modes", "gradient_replacement,villain", "backdoors of TestVflipRowsBackdoor")
	vflipRowsDry   = flag.Bool("vflip-rows-dry", false, "TestVflipRowsBackdoor's cheater stays honest (backdoor_dry_run): the trigger and the purification on an honestly trained model")
	vflipRowsT     = flag.Float64("vflip-rows-threshold", 0, "TestVflipRowsBackdoor's key vflip_rows_threshold (0: the default)")
	vflipRowsFrom  = flag.Int64("vflip-rows-from", vflipCheatFrom, "the step from which TestVflipRowsBackdoor's cheater plants its backdoor")
)

// TestVflipRowsBackdoor measures VFLIP at inference (vflip_rows) on
// TestVflipDetectionAUC's table and schedule (three passive parties,
// -vflip-auc-shared, -vflip-auc-label; p2 plants the backdoor from step
// 60): per run the row detection AUC, the shares flagged, and success,
// clean rate and clean test AUC without and with purification; then each
// backdoor's medians.
func TestVflipRowsBackdoor(t *testing.T) {
	if *vflipRowsSeeds == 0 {
		t.Skip("measurement: -vflip-rows-seeds N")
	}
	for _, mode := range strings.Split(*vflipRowsModes, ",") {
		var auc, asr, asrP, rate, rateP, cost, fc, ft []float64
		for seed := range *vflipRowsSeeds {
			cfg := partiesConfig(t)
			cfg.SynthRows, cfg.Epochs, cfg.EvalEvery, cfg.Attacks = 20000, 3, 20, []string{"norm"}
			cfg.Parties, cfg.SynthParties, cfg.SynthShared = nil, 3, *vflipAUCShared
			cfg.SynthSharedLabel, cfg.Contribution = *vflipAUCLabel, false
			cfg.Seed, cfg.Detectors, cfg.VflipRowsThreshold = uint64(seed+1), []string{"vflip_rows"}, *vflipRowsT
			cfg.Backdoor, cfg.BackdoorFrom, cfg.Cheater, cfg.BackdoorDryRun = mode, *vflipRowsFrom, "p2", *vflipRowsDry
			s, err := Train(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := s.Backdoor
			if b == nil || b.VflipRows == nil {
				t.Fatalf("%s seed %d: no vflip_rows outcome in the summary", mode, seed+1)
			}
			v := b.VflipRows
			t.Logf("%-20s seed %2d: detection AUC %.3f, flagged clean %.3f triggered %.3f (p2 %.3f); ASR %.3f → %.3f, clean rate %.3f → %.3f, clean AUC %.4f → %.4f",
				mode, seed+1, v.DetectionAUC, v.FlaggedClean, v.FlaggedTriggered, v.CheaterFlagged, b.ASR, v.ASR, b.CleanRate, v.CleanRate, b.CleanTestAUC, v.CleanTestAUC)
			auc, asr, asrP = append(auc, v.DetectionAUC), append(asr, b.ASR), append(asrP, v.ASR)
			rate, rateP = append(rate, b.CleanRate), append(rateP, v.CleanRate)
			cost, fc, ft = append(cost, b.CleanTestAUC-v.CleanTestAUC), append(fc, v.FlaggedClean), append(ft, v.FlaggedTriggered)
		}
		med := func(x []float64) string {
			y := slices.Clone(x)
			slices.Sort(y)
			return fmt.Sprintf("%.3f (%.3f–%.3f)", y[len(y)/2], y[0], y[len(y)-1])
		}
		t.Logf("%s, %d seeds, median (range): detection AUC %s; flagged clean %s, triggered %s; ASR %s → %s; clean rate %s → %s; clean AUC cost %s",
			mode, len(auc), med(auc), med(fc), med(ft), med(asr), med(asrP), med(rate), med(rateP), med(cost))
	}
}
