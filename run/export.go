package run

import (
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/protect"
)

// This file exports the pieces of the in-process run that the networked
// parties (package netrun) build in exactly the same way, so that both
// modes give identical results for the same configuration.

// BuildProtection builds the gradient protection, the optional
// distance-correlation loss and, under label DP, the noisy training labels
// of cfg, as the in-process run does.
func BuildProtection(cfg *Config, train *data.Dataset) (protect.Protector, *protect.DCor, []uint8, error) {
	return buildProtection(cfg, train)
}

// ExpandAttacks resolves "all" in an attack list as the in-process run
// does.
func ExpandAttacks(names []string) []string { return expandAttacks(names) }

// DataOptions returns the data.Options the in-process run loads cfg's
// data with.
func DataOptions(cfg *Config) data.Options { return dataOptions(cfg) }
