package run

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
)

var (
	vflipAUCSeeds  = flag.Int("vflip-auc-seeds", 0, "honest and cheating seeds per mode of TestVflipDetectionAUC (0: skipped; the table of docs/methods/integrity.md §9b: 20)")
	vflipAUCShared = flag.Float64("vflip-auc-shared", 0.5, "synth_shared of TestVflipDetectionAUC's table")
	vflipAUCLabel  = flag.Float64("vflip-auc-label", 0, "synth_shared_label of TestVflipDetectionAUC's table (the label's correlation with the shared factor; 0: not tied)")
	vflipAUCDet    = flag.String("vflip-auc-detector", "vflip", "the cross-party detector TestVflipDetectionAUC scores (vflip or vflip_rows)")
	vflipAUCModes  = flag.String("vflip-auc-modes", "noise,constant,replay,gradient_replacement,villain", "cheating modes of TestVflipDetectionAUC")
)

// vflipCheatFrom is the step from which the cheater of
// TestVflipDetectionAUC cheats (after the detector's ten-batch warm-up).
const vflipCheatFrom = 60

// vflipRun is one run of TestVflipDetectionAUC: the detector's largest
// score, each evaluation window's largest score by the step ending it,
// the party scored highest over the run, the cheater's leave-one-out
// gain and the backdoor's success.
type vflipRun struct {
	max     float64
	windows [][2]float64 // (step, largest score since the evaluation before)
	suspect string
	gain    float64
	asr     float64
	testAUC float64
}

// vflipDetectionRun trains three passive parties on the correlated
// synthetic table with vflip on, party p2 cheating by mode ("" honest).
func vflipDetectionRun(t *testing.T, seed int, mode string) vflipRun {
	cfg := partiesConfig(t)
	cfg.SynthRows, cfg.Epochs, cfg.EvalEvery, cfg.Attacks = 20000, 3, 20, []string{"norm"}
	cfg.Parties, cfg.SynthParties, cfg.SynthShared = nil, 3, *vflipAUCShared
	cfg.SynthSharedLabel = *vflipAUCLabel
	cfg.Seed, cfg.Detectors, cfg.Contribution = uint64(seed+1), []string{*vflipAUCDet}, true
	switch mode {
	case "":
	case "noise", "constant", "replay":
		cfg.FreeRide, cfg.FreeRideFrom, cfg.Cheater = mode, vflipCheatFrom, "p2"
	default:
		cfg.Backdoor, cfg.BackdoorFrom, cfg.Cheater = mode, vflipCheatFrom, "p2"
	}
	var mu sync.Mutex
	var out vflipRun
	s, err := Train(context.Background(), cfg, Options{OnEval: func(e rundir.EvalRecord) {
		mu.Lock()
		defer mu.Unlock()
		if v, ok := e.Integrity[*vflipAUCDet]; ok {
			out.windows = append(out.windows, [2]float64{float64(e.Step), v})
		}
		if g := e.PartyGain["p2"]; g != nil {
			out.gain = *g
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	out.max, out.testAUC = s.Integrity[*vflipAUCDet], s.TestAUCFinal
	best := -1.0
	for _, p := range []string{"p1", "p2", "p3"} {
		if v := s.Integrity[*vflipAUCDet+"/"+p]; v > best {
			best, out.suspect = v, p
		}
	}
	if s.Backdoor != nil {
		out.asr = s.Backdoor.ASR
	}
	return out
}

// firstAbove is the step ending the first evaluation window whose largest
// score reaches threshold (-1: none).
func firstAbove(windows [][2]float64, threshold float64) int {
	for _, w := range windows {
		if w[1] >= threshold {
			return int(w[0])
		}
	}
	return -1
}

// TestVflipDetectionAUC measures the cross-party detector's detection
// AUC over honest and cheating three-passive runs on the synthetic table
// correlated by synth_shared (-vflip-auc-shared, 0.5), its label tied to
// the shared factor by synth_shared_label (-vflip-auc-label, 0: not
// tied; the tied table of §9b: 0.8), party p2 cheating
// from step 60 of about 190 by each mode (-vflip-auc-modes), with
// -vflip-auc-seeds N seeds each (20 for the table of
// docs/methods/integrity.md §9b). It logs each mode's AUC, how often the
// detector names p2, the cheater's leave-one-party-out gain (the
// contribution figure, score −gain) and, for the default threshold, the
// honest maximum and each cheating run's firing step.
func TestVflipDetectionAUC(t *testing.T) {
	if *vflipAUCSeeds == 0 {
		t.Skip("measurement: -vflip-auc-seeds N")
	}
	n := *vflipAUCSeeds
	runs := func(mode string) []vflipRun {
		var out []vflipRun
		for seed := range n {
			r := vflipDetectionRun(t, seed, mode)
			t.Logf("%-20s seed %2d: vflip max %8.3f (suspect %s), p2 gain %+.4f, test AUC %.4f, ASR %.3f, windows %v",
				orHonest(mode), seed+1, r.max, r.suspect, r.gain, r.testAUC, r.asr, r.windows)
			out = append(out, r)
		}
		return out
	}
	honest := runs("")
	hmax := slices.MaxFunc(honest, func(a, b vflipRun) int { return cmpF(a.max, b.max) }).max
	labels := append(make([]uint8, n), slices.Repeat([]uint8{1}, n)...)
	for _, mode := range strings.Split(*vflipAUCModes, ",") {
		cheat := runs(mode)
		var s, g []float64
		named, above := 0, 0
		var steps []string
		for _, r := range append(slices.Clone(honest), cheat...) {
			s = append(s, r.max)
			g = append(g, -r.gain)
		}
		for _, r := range cheat {
			if r.suspect == "p2" {
				named++
			}
			if r.max > hmax {
				above++
			}
			steps = append(steps, fmt.Sprint(firstAbove(r.windows, hmax*1.0000001)))
		}
		auc, _ := metrics.AUC(s, labels, nil)
		gauc, _ := metrics.AUC(g, labels, nil)
		t.Logf("%s: vflip AUC %.3f, p2 named in %d of %d, %d above every honest run (%.3f), first window above it ends at step %s; contribution (−p2 gain) AUC %.3f",
			mode, auc, named, n, above, hmax, strings.Join(steps, " "), gauc)
	}
}

func orHonest(mode string) string {
	if mode == "" {
		return "honest"
	}
	return mode
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
