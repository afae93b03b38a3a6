package config

import (
	"maps"
	"slices"

	"github.com/splitguard/splitguard/integrity"
)

// resolveDetectors fills the detectors of a run of one passive party
// left unset with the default set (integrity.DefaultDetectors), writes an
// empty list as [none], and gives each detector on that has a default
// alarm threshold (integrity.DefaultAlarm) and none in IntegrityAlarm
// that threshold, so that config.yaml records what runs. A run of several
// passive parties keeps its list: the default detectors score one party's
// embedding.
func (c *Config) resolveDetectors() {
	if len(c.Parties) >= 2 {
		return
	}
	switch {
	case c.Detectors == nil:
		c.Detectors = integrity.DefaultDetectors()
	case len(c.Detectors) == 0:
		c.Detectors = []string{integrity.NoDetectors}
	}
	var missing []string
	for _, d := range c.Detectors {
		if _, ok := integrity.DefaultAlarm(d); ok {
			if _, given := c.IntegrityAlarm[d]; !given {
				missing = append(missing, d)
			}
		}
	}
	if len(missing) == 0 {
		return
	}
	alarm := maps.Clone(c.IntegrityAlarm) // not the caller's map
	if alarm == nil {
		alarm = map[string]float64{}
	}
	for _, d := range missing {
		alarm[d], _ = integrity.DefaultAlarm(d)
	}
	c.IntegrityAlarm = alarm
}

// DetectorsOn lists the detectors that run (Detectors without
// integrity.NoDetectors).
func (c *Config) DetectorsOn() []string {
	return slices.DeleteFunc(slices.Clone(c.Detectors), func(d string) bool { return d == integrity.NoDetectors })
}

// validateAlarms checks the alarm thresholds (key integrity_alarm) and
// that [none] stands alone in key detectors.
func (c *Config) validateAlarms(bad func(string, ...any)) {
	if slices.Contains(c.Detectors, integrity.NoDetectors) && len(c.Detectors) > 1 {
		bad("detectors %v: %q turns every detector off and stands alone (key detectors)", c.Detectors, integrity.NoDetectors, keyArg("detectors"))
	}
	for _, d := range slices.Sorted(maps.Keys(c.IntegrityAlarm)) {
		v := c.IntegrityAlarm[d]
		if !slices.Contains(c.DetectorsOn(), d) {
			bad("an alarm threshold for detector %q, which is not on (key integrity_alarm; key detectors)", d, keyArg("integrity_alarm"), keyArg("detectors"))
		}
		if !(v >= 0) {
			bad("alarm threshold %g for detector %q, want ≥ 0 (0: no alarm; key integrity_alarm)", v, d, keyArg("integrity_alarm"))
		}
	}
}

// ResolvedAlarms returns the alarm thresholds the run will have
// (IntegrityAlarm once resolved: the default detectors' own included)
// without changing c.
func (c *Config) ResolvedAlarms() map[string]float64 {
	r := *c
	r.Layers = slices.Clone(c.Layers) // Resolve may write them
	r.Resolve()
	return r.IntegrityAlarm
}
