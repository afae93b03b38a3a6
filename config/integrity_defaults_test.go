package config

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestDefaultDetectorsResolved: a two-party run left without key
// detectors gets the default set at its default alarm threshold (what
// config.yaml records); an empty list becomes [none] and runs nothing;
// a given list and a given alarm threshold are kept; a run of several
// passive parties gets none; the caller's map is not written.
func TestDefaultDetectorsResolved(t *testing.T) {
	given := map[string]float64{"replay": 0}
	for _, tc := range []struct {
		name      string
		change    func(c *Config)
		detectors []string
		alarm     map[string]float64
		guard     int // detectors the guard runs
	}{
		{"unset", func(c *Config) {}, []string{"replay"}, map[string]float64{"replay": 1}, 1},
		{"empty", func(c *Config) { c.Detectors = []string{} }, []string{"none"}, nil, 0},
		{"none", func(c *Config) { c.Detectors = []string{"none"} }, []string{"none"}, nil, 0},
		{"another", func(c *Config) { c.Detectors = []string{"collapse"} }, []string{"collapse"}, nil, 1},
		{"replay and another", func(c *Config) { c.Detectors = []string{"collapse", "replay"} }, []string{"collapse", "replay"}, map[string]float64{"replay": 1}, 2},
		{"alarm off", func(c *Config) { c.IntegrityAlarm = given }, []string{"replay"}, map[string]float64{"replay": 0}, 1},
		{"three parties", func(c *Config) { c.SynthParties = 3 }, nil, nil, 0},
	} {
		c := Default()
		c.SynthRows, c.Out = 100, t.TempDir()
		tc.change(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := c.ResolvedAlarms(); !maps.Equal(got, tc.alarm) {
			t.Errorf("%s: resolved alarms %v, want %v", tc.name, got, tc.alarm)
		}
		c.Resolve()
		if !slices.Equal(c.Detectors, tc.detectors) || !maps.Equal(c.IntegrityAlarm, tc.alarm) {
			t.Errorf("%s: detectors %v alarm %v, want %v %v", tc.name, c.Detectors, c.IntegrityAlarm, tc.detectors, tc.alarm)
		}
		if len(c.DetectorsOn()) != tc.guard {
			t.Errorf("%s: %d detectors on, want %d", tc.name, len(c.DetectorsOn()), tc.guard)
		}
		if _, err := c.NewGuard(); err != nil {
			t.Errorf("%s: guard: %v", tc.name, err)
		}
	}
	if !maps.Equal(given, map[string]float64{"replay": 0}) {
		t.Errorf("the caller's map was written: %v", given)
	}
}

// TestAlarmKeysValidated: bad alarm settings are refused naming the key.
func TestAlarmKeysValidated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		key    string
	}{
		{"none with another", func(c *Config) { c.Detectors = []string{"none", "replay"} }, "key detectors"},
		{"alarm of a detector not on", func(c *Config) { c.IntegrityAlarm = map[string]float64{"collapse": 0.9} }, "key integrity_alarm"},
		{"alarm with none", func(c *Config) { c.Detectors, c.IntegrityAlarm = []string{"none"}, map[string]float64{"replay": 1} }, "key integrity_alarm"},
		{"negative alarm", func(c *Config) { c.IntegrityAlarm = map[string]float64{"replay": -1} }, "key integrity_alarm"},
		{"unknown detector", func(c *Config) { c.Detectors = []string{"nope"} }, "key detectors"},
	} {
		c := Default()
		c.SynthRows, c.Out = 100, t.TempDir()
		tc.change(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.key)
		}
	}
}

// TestEmptyDetectorsSurviveYAML: config.yaml of a run with the detectors
// turned off reads back as off (an empty list would be dropped by
// omitempty and read back as the default set).
func TestEmptyDetectorsSurviveYAML(t *testing.T) {
	for _, raw := range []string{"detectors: []\n", "detectors: [none]\n"} {
		c := Default()
		if err := DecodeYAML([]byte(raw), &c); err != nil {
			t.Errorf("%q: %v", raw, err)
			continue
		}
		c.Resolve()
		b, err := Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		back := Default()
		if err := DecodeYAML(b, &back); err != nil {
			t.Fatal(err)
		}
		back.Resolve()
		if len(back.DetectorsOn()) != 0 || !strings.Contains(string(b), "detectors: [none]") {
			t.Errorf("%q: read back with detectors %v:\n%s", raw, back.Detectors, b)
		}
	}
}
