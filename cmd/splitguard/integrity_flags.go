package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/integrity"
)

// integrityFlags binds the free-riding and detection flags (package
// integrity, docs/methods/integrity.md) to c; part of trainFlags.
func integrityFlags(fs *pflag.FlagSet, c *config.Config) {
	fs.StringVar(&c.FreeRide, "free-ride", c.FreeRide, "make the passive party a free-rider sending embeddings without information: "+
		strings.Join(integrity.TamperNames(), ", ")+" (default: honest)")
	fs.StringVar(&c.Cheater, "cheater", c.Cheater, "with several passive parties: the name of the one that cheats (--free-ride, --backdoor), e.g. p2")
	fs.Int64Var(&c.FreeRideFrom, "free-ride-from", c.FreeRideFrom, "the training step from which --free-ride applies (honest before)")
	fs.StringVar(&c.Backdoor, "backdoor", c.Backdoor, "make the passive party plant a backdoor: "+
		strings.Join(integrity.BackdoorNames(), ", ")+" (default: honest; in process only)")
	fs.IntVar(&c.BackdoorTarget, "backdoor-target", c.BackdoorTarget, "the backdoor's target class (0 or 1)")
	fs.IntVar(&c.BackdoorKnown, "backdoor-known", c.BackdoorKnown, fmt.Sprintf("how many training rows of the target class the attacker is told of (0: %d)", config.DefaultBackdoorKnown))
	fs.Int64Var(&c.BackdoorFrom, "backdoor-from", c.BackdoorFrom, "the training step from which --backdoor poisons (label inference may watch before)")
	fs.Float64Var(&c.BackdoorPoison, "backdoor-poison", c.BackdoorPoison, "the share of training rows poisoned (0: 0.01): gradient_replacement's drawn rows, villain's first target rows found")
	fs.Float64Var(&c.BackdoorAmplify, "backdoor-amplify", c.BackdoorAmplify, "the backdoor's amplification: γ of gradient_replacement (0: 10), β of villain (0: 0.4)")
	fs.Float64Var(&c.BackdoorTrigger, "backdoor-trigger", c.BackdoorTrigger, "gradient_replacement: the value v of its trigger stripe v, 0, v, … on the last half of the passive party's numeric columns, scaled to [0, 1] (0: 1, and no stripe for a party with categorical columns, whose trigger is their rarest ids)")
	fs.StringVar(&c.BackdoorPairing, "backdoor-pairing", c.BackdoorPairing, "gradient_replacement: pair each known target row with a poisoned row of its own batch, which learns from that row's gradient of the same step (batch, VFLAIR's; the default), or with one poisoned row for the whole run, which learns from the target row's last kept gradient (fixed)")
	fs.BoolVar(&c.BackdoorDryRun, "backdoor-dry-run", c.BackdoorDryRun, "keep the passive party honest but measure --backdoor's trigger on the model (the reference for its attack success rate)")
	fs.StringVar(&c.PassiveOptimizer, "passive-optimizer", c.PassiveOptimizer, "make the passive party train its bottom with another optimiser: "+
		strings.Join(integrity.OptimizerNames(), ", ")+" (default: Adam, honest)")
	fs.Float64Var(&c.PassiveOptimizerLR, "passive-optimizer-lr", c.PassiveOptimizerLR, "the learning rate of --passive-optimizer (0: --lr)")
	fs.StringSliceVar(&c.Detectors, "detectors", c.Detectors, "active party's detectors scoring every training batch's embedding: "+
		strings.Join(integrity.DetectorNames(), ", ")+" (default with one passive party: "+strings.Join(integrity.DefaultDetectors(), ", ")+"; none: no detector)")
	fs.Var(&floatMap{m: &c.IntegrityStop}, "integrity-stop", "end the run cleanly when a detector's score reaches a threshold, DETECTOR=THRESHOLD,… (e.g. replay=1)")
	fs.Var(&floatMap{m: &c.IntegrityAlarm}, "integrity-alarm", "warn (log, summary.json integrity_alarms) when a detector's score reaches a threshold, the run going on, DETECTOR=THRESHOLD,… (default: each default detector's own, replay=1; 0: no alarm)")
	fs.Float64Var(&c.VflipRowsThreshold, "vflip-rows-threshold", c.VflipRowsThreshold, fmt.Sprintf("detector vflip_rows: the z-score of a row's reconstruction error past which a party votes against another's block (0: %g)", integrity.VflipRowsThreshold))
	fs.BoolVar(&c.Contribution, "contribution", c.Contribution, "score the validation split also without the passive party's embedding: its gain in eval.jsonl and summary.json")
	fs.Float64Var(&c.HijackStop, "hijack-stop", c.HijackStop, "the passive party refuses the active party's gradients, ending the run cleanly, when the share of their rows on the minority side of their principal direction, averaged over 20 batches, falls below this (a label-free sign of training hijacking, e.g. 0.01; 0: off)")
	fs.Float64Var(&c.MinPassiveGain, "min-passive-gain", c.MinPassiveGain, "end the run cleanly at an evaluation where the passive party's gain is below this (needs --contribution; 0: never)")
}

// floatMap is a flag of NAME=VALUE pairs into a map.
type floatMap struct{ m *map[string]float64 }

func (f *floatMap) String() string {
	if f.m == nil || len(*f.m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(*f.m)) {
		parts = append(parts, k+"="+strconv.FormatFloat((*f.m)[k], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

func (f *floatMap) Set(s string) error {
	if *f.m == nil {
		*f.m = map[string]float64{}
	}
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || k == "" || err != nil {
			return fmt.Errorf("%q is not NAME=NUMBER", part)
		}
		(*f.m)[k] = x
	}
	return nil
}

func (f *floatMap) Type() string { return "name=value,…" }
