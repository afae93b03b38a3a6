package netrun

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/run"
)

var (
	backdoorScoreSeeds = flag.Int("backdoor-stop-seeds", 0, "TestBackdoorStopScores: honest and cheating seeds (1…N) on the stop test's table (0: skip)")
	backdoorScoreModes = flag.String("backdoor-stop-modes", "gradient_replacement", "TestBackdoorStopScores: the backdoors measured, comma-separated")
	backdoorScoreRows  = flag.Int("backdoor-stop-rows", 1500, "TestBackdoorStopScores: the synthetic table's rows")
	backdoorScoreKnown = flag.Int("backdoor-stop-known", 0, "TestBackdoorStopScores: key backdoor_known (0: the default)")
	backdoorScorePois  = flag.Float64("backdoor-stop-poison", 0, "TestBackdoorStopScores: key backdoor_poison (0: the default)")
	backdoorScoreAmp   = flag.Float64("backdoor-stop-amplify", 0, "TestBackdoorStopScores: key backdoor_amplify (0: the default)")
	backdoorScorePair  = flag.String("backdoor-stop-pairing", "", "TestBackdoorStopScores: key backdoor_pairing (empty: the default)")
	backdoorScoreTrig  = flag.Float64("backdoor-stop-trigger", 0, "TestBackdoorStopScores: key backdoor_trigger (0: the default)")
)

// TestBackdoorStopScores measures, in process, every one-party
// detector's largest score over the run on the table of
// TestBackdoorStoppedAsInProcess for -backdoor-stop-seeds honest seeds
// and as many cheating seeds of each backdoor at its defaults, and logs
// them with the detection AUC and how many cheating runs score above
// every honest run: the figures its threshold is chosen from
// (integrity.md §11h). Run with
//
//	go test ./netrun -run TestBackdoorStopScores -backdoor-stop-seeds 10 -v
func TestBackdoorStopScores(t *testing.T) {
	n := *backdoorScoreSeeds
	if n == 0 {
		t.Skip("set -backdoor-stop-seeds")
	}
	dets := slices.DeleteFunc(integrity.DetectorNames(), integrity.IsCrossParty)
	data := synthFile(t, *backdoorScoreRows)
	scores := func(mode string) (map[string][]float64, []float64) {
		out := map[string][]float64{}
		var asr []float64
		for seed := 1; seed <= n; seed++ {
			cfg := backdoorBase(t, filepath.Join(t.TempDir(), "run"))
			cfg.Data, cfg.Seed, cfg.Detectors = data, uint64(seed), dets
			if cfg.Backdoor = mode; mode != "" {
				cfg.BackdoorKnown, cfg.BackdoorPoison, cfg.BackdoorAmplify = *backdoorScoreKnown, *backdoorScorePois, *backdoorScoreAmp
				cfg.BackdoorPairing, cfg.BackdoorTrigger = *backdoorScorePair, *backdoorScoreTrig
			}
			s, err := run.Train(context.Background(), cfg, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range dets {
				out[d] = append(out[d], s.Integrity[d])
			}
			if s.Backdoor != nil {
				asr = append(asr, s.Backdoor.ASR)
			}
		}
		return out, asr
	}
	honest, _ := scores("")
	for _, mode := range strings.Split(*backdoorScoreModes, ",") {
		cheat, asr := scores(mode)
		t.Logf("%s: attack success %s", mode, fmtFloats(asr))
		for _, d := range dets {
			h, c := honest[d], cheat[d]
			labels := append(make([]uint8, len(h)), slices.Repeat([]uint8{1}, len(c))...)
			auc, _ := metrics.AUC(append(slices.Clone(h), c...), labels, nil)
			top, above := slices.Max(h), 0
			for _, v := range c {
				if v > top {
					above++
				}
			}
			t.Logf("%s %s: AUC %.3f, %d of %d above the honest maximum %.4g\n  honest %s\n  cheat  %s",
				mode, d, auc, above, len(c), top, fmtFloats(h), fmtFloats(c))
		}
	}
}

func fmtFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(s, " ")
}
