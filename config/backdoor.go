package config

import (
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
)

// DefaultBackdoorKnown is how many training rows of the target class a
// backdoor attacker knows when key backdoor_known is 0.
const DefaultBackdoorKnown = 10

// streamBackdoorKnown is the PCG stream of the draw of the known rows.
const streamBackdoorKnown = 0xbd0

// validateBackdoor checks the backdoor keys: the attack's name, the
// target class, the known rows, the start, the poisoned share, the
// amplification and the trigger value.
func (c *Config) validateBackdoor(bad func(string, ...any)) {
	if c.Backdoor != "" && !slices.Contains(integrity.BackdoorNames(), c.Backdoor) {
		bad("unknown backdoor %q, want one of %v (key backdoor)", c.Backdoor, integrity.BackdoorNames(), keyArg("backdoor"))
	}
	if c.Backdoor != "" && c.FreeRide != "" {
		bad("a backdoor (key backdoor) and a free-riding mode (key free_ride) at once", keyArg("backdoor"), keyArg("free_ride"))
	}
	if c.BackdoorTarget != 0 && c.BackdoorTarget != 1 {
		bad("backdoor target class %d, want 0 or 1 (key backdoor_target)", c.BackdoorTarget, keyArg("backdoor_target"))
	}
	if c.BackdoorKnown < 0 {
		bad("%d known rows of the target class, want at least 0 (key backdoor_known)", c.BackdoorKnown, keyArg("backdoor_known"))
	}
	if c.BackdoorFrom < 0 {
		bad("backdoor from step %d, want at least 0 (key backdoor_from)", c.BackdoorFrom, keyArg("backdoor_from"))
	}
	if c.BackdoorPoison < 0 || c.BackdoorPoison >= 1 || c.BackdoorPoison != c.BackdoorPoison {
		bad("backdoor poisoned share %g, want in [0, 1) (key backdoor_poison)", c.BackdoorPoison, keyArg("backdoor_poison"))
	}
	if c.BackdoorAmplify < 0 || c.BackdoorAmplify != c.BackdoorAmplify {
		bad("backdoor amplification %g, want ≥ 0 (key backdoor_amplify)", c.BackdoorAmplify, keyArg("backdoor_amplify"))
	}
	if c.BackdoorDryRun && c.Backdoor == "" {
		bad("a dry run (key backdoor_dry_run) of no backdoor (key backdoor)", keyArg("backdoor_dry_run"), keyArg("backdoor"))
	}
	switch {
	case c.BackdoorPairing != "" && c.BackdoorPairing != integrity.PairingInBatch && c.BackdoorPairing != integrity.PairingFixed:
		bad("backdoor pairing %q, want %q or %q (key backdoor_pairing)", c.BackdoorPairing, integrity.PairingInBatch, integrity.PairingFixed, keyArg("backdoor_pairing"))
	case c.BackdoorPairing != "" && c.Backdoor != "gradient_replacement":
		bad("a backdoor pairing (key backdoor_pairing) is gradient_replacement's, not of backdoor %q (key backdoor)", c.Backdoor, keyArg("backdoor_pairing"), keyArg("backdoor"))
	}
	if c.BackdoorTrigger != c.BackdoorTrigger {
		bad("backdoor trigger value NaN (key backdoor_trigger)", keyArg("backdoor_trigger"))
	}
}

// KnownTargetRows draws the training rows of the target class a backdoor
// attacker is told of (key backdoor_known, at most all of them), seeded
// by the run's seed: their IDs, in the order drawn. This reads labels:
// the caller (the evaluation side) hands the IDs to the passive party.
func (c *Config) KnownTargetRows(ids []uint64, labels []uint8) []uint64 {
	var pool []uint64
	for i, y := range labels {
		if int(y) == c.BackdoorTarget {
			pool = append(pool, ids[i])
		}
	}
	k := c.BackdoorKnown
	if k == 0 {
		k = DefaultBackdoorKnown
	}
	k = min(k, len(pool))
	rng := rand.New(rand.NewPCG(c.Seed, streamBackdoorKnown))
	out := make([]uint64, k)
	for i, j := range rng.Perm(len(pool))[:k] {
		out[i] = pool[j]
	}
	return out
}

// NewBackdoor returns the passive party's backdoor attack (nil for an
// honest party), told of the known rows and given the passive party's
// training IDs and features.
func (c *Config) NewBackdoor(known, trainIDs []uint64, train *data.Features) (integrity.Backdoor, error) {
	if c.Backdoor == "" {
		return nil, nil
	}
	return integrity.NewBackdoor(c.Backdoor, integrity.BackdoorConfig{Known: known, TrainIDs: trainIDs, Train: train,
		From: c.BackdoorFrom, Poison: c.BackdoorPoison, Amplify: c.BackdoorAmplify, TriggerValue: c.BackdoorTrigger, Pairing: c.BackdoorPairing, Seed: c.Seed, DryRun: c.BackdoorDryRun})
}
