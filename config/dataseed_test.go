package config

import (
	"slices"
	"testing"
)

// TestSplitSeedKeepsTheTestSplit: synthetic rows loaded with seed 2 and
// split_seed 1 are the rows and the test split of seed 1; seed 2 alone
// gives another test split.
func TestSplitSeedKeepsTheTestSplit(t *testing.T) {
	load := func(seed, splitSeed uint64) ([]uint64, []uint8) {
		c := Default()
		c.SynthRows, c.Seed, c.SplitSeed = 400, seed, splitSeed
		s, err := c.LoadData()
		if err != nil {
			t.Fatal(err)
		}
		s.SortByID()
		return s.Test.IDs, s.Test.Labels
	}
	ids1, labels1 := load(1, 0)
	ids2, labels2 := load(2, 1)
	if len(ids1) == 0 || !slices.Equal(ids1, ids2) || !slices.Equal(labels1, labels2) {
		t.Errorf("seed 2 with split_seed 1: %d test rows, want the %d of seed 1", len(ids2), len(ids1))
	}
	if ids3, _ := load(2, 0); slices.Equal(ids1, ids3) {
		t.Error("seed 2 without split_seed has seed 1's test split")
	}
	if c := (Config{Seed: 5}); c.DataSeed() != 5 {
		t.Errorf("DataSeed without split_seed: %d, want 5", c.DataSeed())
	}
}
