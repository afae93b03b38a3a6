package config

import "slices"

// validateSynthShared checks key synth_shared: a share in [0, 1] of
// synthetic data.
func (c *Config) validateSynthShared(bad func(string, ...any)) {
	if c.SynthSharedLabel != 0 {
		if !(c.SynthSharedLabel >= 0 && c.SynthSharedLabel < 1) {
			bad("the label's correlation %g with the shared factor (key synth_shared_label): want a correlation in [0, 1)", c.SynthSharedLabel, keyArg("synth_shared_label"))
		}
		if !(c.SynthShared > 0) {
			bad("a label tied to the shared factor (key synth_shared_label) needs that factor: key synth_shared > 0", keyArg("synth_shared_label"), keyArg("synth_shared"))
		}
	}
	if c.SynthShared == 0 {
		return
	}
	if !(c.SynthShared >= 0 && c.SynthShared <= 1) {
		bad("synth_shared %g: want a share in [0, 1]", c.SynthShared, keyArg("synth_shared"))
	}
	if c.SynthRows <= 0 || c.Data != "" {
		bad("synth_shared correlates synthetic data: it needs key synth_rows and no key data", keyArg("synth_shared"), keyArg("synth_rows"))
	}
}

// validateCheater checks that a run of several passive parties with a
// cheating mode (keys free_ride, backdoor) names its cheater (key
// cheater), one of the parties, and that a cheater cheats.
func (c *Config) validateCheater(bad func(string, ...any)) {
	cheats := c.FreeRide != "" || c.Backdoor != ""
	switch {
	case cheats && c.Cheater == "":
		bad("with several passive parties, a cheating mode (keys free_ride, backdoor) needs the cheating party's name (key cheater): one of %v", c.PartyNames(), keyArg("cheater"))
	case c.Cheater != "" && !cheats:
		bad("passive party %s is named the cheater (key cheater) but no cheating mode is set (keys free_ride, backdoor)", c.Cheater, keyArg("cheater"), keyArg("free_ride"), keyArg("backdoor"))
	case c.Cheater != "" && !slices.Contains(c.PartyNames(), c.Cheater):
		bad("cheater %q is not a passive party: want one of %v", c.Cheater, c.PartyNames(), keyArg("cheater"))
	}
	if c.Backdoor != "" && c.AggregationOr() != AggregationConcat {
		bad("a backdoor with several passive parties is built for aggregation concat (key aggregation)", keyArg("backdoor"), keyArg("aggregation"))
	}
}

// CheaterIndex is the index in key parties of the cheating passive party
// (key cheater), -1 when every party is honest.
func (c *Config) CheaterIndex() int {
	if c.Cheater == "" {
		return -1
	}
	return slices.Index(c.PartyNames(), c.Cheater)
}
