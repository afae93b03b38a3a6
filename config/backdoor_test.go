package config

import (
	"slices"
	"strings"
	"testing"
)

// TestBackdoorKeysValidated: each bad backdoor key is refused naming the
// key; good settings pass.
func TestBackdoorKeysValidated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		key    string // "" for none
	}{
		{"good", func(c *Config) { c.Backdoor, c.BackdoorKnown, c.BackdoorAmplify = "villain", 5, 2 }, ""},
		{"unknown attack", func(c *Config) { c.Backdoor = "nope" }, "key backdoor"},
		{"with a free-rider", func(c *Config) { c.Backdoor, c.FreeRide = "villain", "noise" }, "key free_ride"},
		{"target 2", func(c *Config) { c.Backdoor, c.BackdoorTarget = "villain", 2 }, "key backdoor_target"},
		{"negative known", func(c *Config) { c.BackdoorKnown = -1 }, "key backdoor_known"},
		{"negative from", func(c *Config) { c.BackdoorFrom = -1 }, "key backdoor_from"},
		{"poison 1", func(c *Config) { c.BackdoorPoison = 1 }, "key backdoor_poison"},
		{"dry run of nothing", func(c *Config) { c.BackdoorDryRun = true }, "key backdoor_dry_run"},
		{"negative amplify", func(c *Config) { c.BackdoorAmplify = -1 }, "key backdoor_amplify"},
		{"fixed pairing", func(c *Config) { c.Backdoor, c.BackdoorPairing = "gradient_replacement", "fixed" }, ""},
		{"unknown pairing", func(c *Config) { c.Backdoor, c.BackdoorPairing = "gradient_replacement", "epoch" }, "key backdoor_pairing"},
		{"pairing of villain", func(c *Config) { c.Backdoor, c.BackdoorPairing = "villain", "batch" }, "key backdoor_pairing"},
	} {
		c := Default()
		c.SynthRows, c.Out = 100, t.TempDir()
		tc.change(&c)
		err := c.Validate()
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.key != "" && (err == nil || !strings.Contains(err.Error(), tc.key)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.key)
		}
	}
}

// TestKnownTargetRows: the known rows are of the target class, distinct,
// as many as asked (at most all), the same for a seed and another set
// for another seed.
func TestKnownTargetRows(t *testing.T) {
	ids := make([]uint64, 40)
	labels := make([]uint8, 40)
	for i := range ids {
		ids[i], labels[i] = uint64(100+i), uint8(i%4/3) // rows 3, 7, 11, …: class 1
	}
	c := Default()
	c.BackdoorTarget, c.BackdoorKnown, c.Seed = 1, 4, 9
	got := c.KnownTargetRows(ids, labels)
	if len(got) != 4 {
		t.Fatalf("%d rows, want 4", len(got))
	}
	for _, id := range got {
		if (id-100)%4 != 3 {
			t.Errorf("row %d is not of class 1", id)
		}
	}
	if s := slices.Compact(slices.Sorted(slices.Values(got))); len(s) != 4 {
		t.Errorf("repeated rows: %v", got)
	}
	if again := c.KnownTargetRows(ids, labels); !slices.Equal(again, got) {
		t.Errorf("same seed: %v, then %v", got, again)
	}
	c.Seed = 10
	if other := c.KnownTargetRows(ids, labels); slices.Equal(other, got) {
		t.Errorf("seeds 9 and 10 draw the same rows %v", got)
	}
	c.BackdoorKnown = 50
	if all := c.KnownTargetRows(ids, labels); len(all) != 10 {
		t.Errorf("asking for 50 of 10: %d rows", len(all))
	}
}
