package config

import "github.com/splitguard/splitguard/integrity"

// validatePartyDetectors checks the detectors of a run of several
// passive parties: only cross-party ones (integrity.IsCrossParty), which
// read each party's block of the combined embedding and so need
// aggregation concat.
func (c *Config) validatePartyDetectors(bad func(string, ...any)) {
	for _, d := range c.DetectorsOn() {
		if !integrity.IsCrossParty(d) {
			bad("detector %s scores one passive party's embedding; with several passive parties only the cross-party detectors run (key detectors)", d, keyArg("detectors"))
			continue
		}
		if c.AggregationOr() != AggregationConcat {
			bad("detector %s reads each passive party's block of the embedding, which only aggregation concat keeps apart (key aggregation)", d, keyArg("aggregation"))
		}
	}
}
