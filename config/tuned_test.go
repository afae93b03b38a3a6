package config

import (
	"strings"
	"testing"
)

// TestTunedKeys: tuned_known and tuned_budget are validated by name, and a
// configuration with tuned_known builds an auditor with a tuned attacker
// beside every per-batch attack (and none beside a model attack).
func TestTunedKeys(t *testing.T) {
	for _, tc := range []struct {
		name        string
		known, budg int
		want        string
	}{
		{"one known row", 1, 0, "key tuned_known"},
		{"too many known rows", 65, 0, "key tuned_known"},
		{"negative budget", 8, -1, "key tuned_budget"},
		{"budget alone", 0, 4, "key tuned_budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.SynthRows, c.Out = 100, "x"
			c.TunedKnown, c.TunedBudget = tc.known, tc.budg
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	c := Default()
	c.SynthRows, c.Out = 100, "x"
	c.Attacks = []string{"norm", "similarity_grad", "completion"}
	c.TunedKnown = 16
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := c.NewAuditor()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Tune(16, 3); err == nil {
		t.Error("the auditor's tuned attackers were not on")
	}
	y, err := Marshal(&c)
	if err != nil || !strings.Contains(string(y), "tuned_known: 16") || strings.Contains(string(y), "tuned_budget") {
		t.Errorf("config.yaml %s (%v): want tuned_known and no tuned_budget", y, err)
	}
}

// TestExpensiveEveryKey: a negative expensive_every is refused by name; a
// positive one reaches the auditor and config.yaml.
func TestExpensiveEveryKey(t *testing.T) {
	c := Default()
	c.SynthRows, c.Out = 100, "x"
	c.ExpensiveEvery = -2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "key expensive_every") {
		t.Fatalf("error %v, want one naming key expensive_every", err)
	}
	c.ExpensiveEvery = 20
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	a, err := c.NewAuditor()
	if err != nil {
		t.Fatal(err)
	}
	if a.ExpensiveEvery() != 20 {
		t.Errorf("auditor samples every %d batches, want 20", a.ExpensiveEvery())
	}
	if y, err := Marshal(&c); err != nil || !strings.Contains(string(y), "expensive_every: 20") {
		t.Errorf("config.yaml %s (%v): want expensive_every: 20", y, err)
	}
}
