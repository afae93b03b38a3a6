package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/baseline"
)

// TestAutoWideStart checks key wide_start's rule on hand-picked cases:
// the baseline below AutoStartRows (50,000) training rows when the
// learning rate is chosen from the data and the run can start from the
// baseline (Wide&Deep, the baseline fitted on every training row, one
// passive party in process); at random otherwise; an explicit value
// always.
func TestAutoWideStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		edit func(*Config)
		want string
		auto bool // wide_start listed in auto
	}{
		{"pdspeech's 201 rows", 201, nil, WideStartBaseline, true},
		{"just under two thousand", 1999, nil, WideStartBaseline, true},
		{"two thousand", 2000, nil, WideStartBaseline, true},
		{"just under fifty thousand", 49999, nil, WideStartBaseline, true},
		{"fifty thousand", 50000, nil, WideStartRandom, true},
		{"Criteo's 162,249 of 200,000", 162249, nil, WideStartRandom, true},
		{"the baseline capped below the rows", 3000, func(c *Config) { c.BaselineRows = 2999 }, WideStartRandom, true},
		{"the baseline's cap at the rows", 3000, func(c *Config) { c.BaselineRows = 3000 }, WideStartBaseline, true},
		{"learning rate given", 600, func(c *Config) { c.LR = 1e-2 }, WideStartRandom, true},
		{"no baseline", 600, func(c *Config) { c.Baseline = false }, WideStartRandom, true},
		{"no wide part", 600, func(c *Config) { c.Model = "mlp" }, WideStartRandom, true},
		{"two processes", 600, func(c *Config) { c.TwoProcess = true }, WideStartRandom, true},
		{"several passive parties", 600, func(c *Config) { c.SynthRows, c.SynthParties, c.Format, c.Data = 100, 2, "synth", "" }, WideStartRandom, true},
		{"explicit random wins", 600, func(c *Config) { c.WideStart = WideStartRandom }, WideStartRandom, false},
		{"explicit baseline wins", 50000, func(c *Config) { c.WideStart = WideStartBaseline }, WideStartBaseline, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkAutoKey(t, tc.n, tc.edit, "wide_start", func(c Config) string { return c.WideStart }, tc.want, tc.auto)
			if tc.auto && !strings.Contains(c.AutoNote(), "wide_start "+tc.want) {
				t.Errorf("the log's note %q does not give wide_start", c.AutoNote())
			}
		})
	}
}

// checkAutoKey resolves a CSV table's default configuration, edited, for
// n training rows, checks the value of key (read by get) and whether auto
// lists it, and returns the configuration.
func checkAutoKey(t *testing.T, n int, edit func(*Config), key string, get func(Config) string, want string, auto bool) Config {
	t.Helper()
	c := Default()
	c.Format, c.Data = "csv", "t.csv"
	if edit != nil {
		edit(&c)
	}
	c.Resolve()
	c.ResolveForData(n)
	if got := get(c); got != want {
		t.Errorf("%s %q, want %q", key, got, want)
	}
	if got := slices.Contains(c.Auto, key); got != auto {
		t.Errorf("%s in auto %v, want %v (auto %v)", key, got, auto, c.Auto)
	}
	return c
}

// TestWideStartValidated checks that a start from the baseline is refused
// where the run cannot make it, and an unknown value, each naming the key.
func TestWideStartValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown value", func(c *Config) { c.WideStart = "zero" }, `"zero"`},
		{"without the baseline", func(c *Config) { c.WideStart, c.Baseline = WideStartBaseline, false }, "one passive party"},
		{"without a wide part", func(c *Config) { c.WideStart, c.Model = WideStartBaseline, "mlp" }, "Wide&Deep"},
		{"two processes", func(c *Config) { c.WideStart, c.TwoProcess = WideStartBaseline, true }, "two-process"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.SynthRows, c.Out = 100, "x"
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), "key wide_start") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming key wide_start and %q", err, tc.want)
			}
		})
	}
	for _, v := range []string{WideStartBaseline, WideStartRandom, ""} {
		c := Default()
		c.SynthRows, c.Out, c.WideStart = 100, "x", v
		if err := c.Validate(); err != nil {
			t.Errorf("wide_start %q refused: %v", v, err)
		}
	}
}

// TestAutoStartRowsIsTheBaselineCap checks that the boundary is the
// baseline's default row cap, so that a default start is from a baseline
// fitted on every training row.
func TestAutoStartRowsIsTheBaselineCap(t *testing.T) {
	if AutoStartRows != baseline.DefaultMaxRows {
		t.Errorf("AutoStartRows %d, the baseline's default cap %d", AutoStartRows, baseline.DefaultMaxRows)
	}
}
