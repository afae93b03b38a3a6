package config

import "math"

// checkCELU refuses CELU-VFL's keys (local_cache, local_weight_threshold)
// where they cannot apply.
func (c *Config) checkCELU(bad func(string, ...any)) {
	celu := c.LocalCache > 1 || c.LocalWeightThreshold != nil
	switch {
	case c.LocalCache < 0:
		bad("key local_cache: %d, want ≥ 1 (0 means 1)", c.LocalCache, keyArg("local_cache"))
	case c.LocalWeightThreshold != nil && (math.IsNaN(*c.LocalWeightThreshold) || *c.LocalWeightThreshold < -1 || *c.LocalWeightThreshold > 1):
		bad("key local_weight_threshold: %g, want a cosine similarity in [-1, 1]", *c.LocalWeightThreshold, keyArg("local_weight_threshold"))
	case celu && c.LocalSteps <= 1:
		bad("key local_cache and key local_weight_threshold shape the local updates: they need key local_steps > 1 (it is %d)", c.LocalSteps, keyArg("local_cache"), keyArg("local_weight_threshold"), keyArg("local_steps"))
	case celu && c.Staleness != 0:
		bad("key local_cache and key local_weight_threshold with key staleness %d: CELU-VFL's workset with a pipelined schedule is not built (staleness must be 0)", c.Staleness, keyArg("local_cache"), keyArg("local_weight_threshold"), keyArg("staleness"))
	}
}
