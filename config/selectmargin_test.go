package config

import (
	"strings"
	"testing"
)

// TestAutoSelectMargin checks key select_margin's rule: a standard error
// when the model is kept on validation and the wide part starts at the
// baseline, none otherwise, an explicit value always; and its refusals.
func TestAutoSelectMargin(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		edit func(*Config)
		want string
		auto bool
	}{
		{"tiny table: started at the baseline", 500, nil, SelectMarginSE, true},
		{"fifty thousand rows: a random start", 50000, nil, SelectMarginOff, true},
		{"random start given", 500, func(c *Config) { c.WideStart = WideStartRandom }, SelectMarginOff, true},
		{"no validation split: the last model", 500, func(c *Config) { c.ValFrac = 0 }, SelectMarginOff, true},
		{"explicit off wins", 500, func(c *Config) { c.SelectMargin = SelectMarginOff }, SelectMarginOff, false},
		{"explicit se wins", 50000, func(c *Config) { c.SelectMargin = SelectMarginSE }, SelectMarginSE, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkAutoKey(t, tc.n, tc.edit, "select_margin", func(c Config) string { return c.SelectMargin }, tc.want, tc.auto)
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown", func(c *Config) { c.SelectMargin = "2se" }, `"2se"`},
		{"with the last model", func(c *Config) { c.SelectMargin, c.Select = SelectMarginSE, SelectLast }, "select: last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.SynthRows, c.Out = 100, "x"
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "key select_margin") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming key select_margin and %q", err, tc.want)
			}
		})
	}
}
