package config

import (
	"strings"
	"testing"
)

func TestSplitAndFeatureKeysValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // "" for valid
	}{
		{"passive list", func(c *Config) { c.PassiveColumns = []string{"I1", "C1"} }, ""},
		{"both lists", func(c *Config) { c.PassiveColumns, c.ActiveColumns = []string{"I1"}, []string{"C1"} }, ""},
		{"a column in both", func(c *Config) { c.PassiveColumns, c.ActiveColumns = []string{"I1", "C2"}, []string{"C2"} }, `column "C2" is in both`},
		{"images", func(c *Config) {
			c.Format, c.Data, c.SynthRows, c.PassiveColumns = "fashion-mnist", "x", 0, []string{"I1"}
		}, "applies to tables"},
		{"feature attack", func(c *Config) { c.FeatureAttacks, c.FeatureAux = []string{"inverse_linear", "inverse_mlp"}, 500 }, ""},
		{"unknown feature attack", func(c *Config) { c.FeatureAttacks = []string{"nope"} }, `unknown feature attack "nope"`},
		{"one auxiliary row", func(c *Config) { c.FeatureAttacks, c.FeatureAux = []string{"inverse_linear"}, 1 }, "key feature_aux"},
		{"feature attacks on images", func(c *Config) {
			c.Format, c.Data, c.SynthRows, c.FeatureAttacks = "fashion-mnist", "x", 0, []string{"inverse_linear"}
		}, "reconstruct table columns"},
	} {
		c := Default()
		c.SynthRows, c.Out = 1000, "out"
		tc.set(&c)
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	c := Default()
	if c.FeatureAuxRows() != DefaultFeatureAux || c.VerticalSplit() {
		t.Errorf("defaults: %d auxiliary rows, split %t", c.FeatureAuxRows(), c.VerticalSplit())
	}
}
