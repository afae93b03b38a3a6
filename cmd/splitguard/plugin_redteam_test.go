package main

import (
	"slices"
	"testing"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
)

// TestToyAttackInBothExpansions: the test file's toy_oracle (it needs the
// oracle, so labels) joins `train --attacks all` and is what `passive
// --red-team --attacks all` names as left out; norm runs in both.
func TestToyAttackInBothExpansions(t *testing.T) {
	train := config.ExpandAttacks([]string{"all"})
	lf, err := audit.NewLabelFree([]string{"all"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(train, "toy_oracle") || !slices.Contains(lf.LeftOut(), "toy_oracle") || slices.Contains(lf.Attacks(), "toy_oracle") {
		t.Errorf("train runs %v; the red team runs %v and leaves out %v: want toy_oracle in train's and left out by the red team", train, lf.Attacks(), lf.LeftOut())
	}
	if !slices.Contains(train, "norm") || !slices.Contains(lf.Attacks(), "norm") {
		t.Errorf("norm: train runs %v, the red team %v", train, lf.Attacks())
	}
}
