package config

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/data"
)

// DefaultFeatureAux is the feature attacker's auxiliary rows (rows whose
// passive features it knows) when key feature_aux is not set.
const DefaultFeatureAux = 1000

// HijackFSHA is key hijack's value for the feature-space hijacking attack.
const HijackFSHA = "fsha"

// FeatureAuxRows returns the feature attacker's number of auxiliary rows.
func (c *Config) FeatureAuxRows() int {
	if c.FeatureAux == 0 {
		return DefaultFeatureAux
	}
	return c.FeatureAux
}

// VerticalSplit reports whether the configuration splits the table's
// columns between the parties (key passive_columns or active_columns).
func (c *Config) VerticalSplit() bool {
	return len(c.PassiveColumns) > 0 || len(c.ActiveColumns) > 0
}

// validateSplit checks the vertical split and the feature attacks.
func (c *Config) validateSplit(bad func(string, ...any)) {
	if c.VerticalSplit() {
		if data.IsImageFormat(c.Format) {
			bad("a vertical split (keys passive_columns, active_columns) applies to tables, not the image format %s", c.Format, keyArg("passive_columns"), keyArg("active_columns"))
		}
		for _, n := range c.PassiveColumns {
			if slices.Contains(c.ActiveColumns, n) {
				bad("column %q is in both parties' columns (keys passive_columns and active_columns): a vertical split gives each column to one party", n, keyArg("passive_columns"))
			}
		}
	}
	if len(c.FeatureAttacks) > 0 && data.IsImageFormat(c.Format) {
		bad("feature attacks (key feature_attacks) reconstruct table columns, not the images of %s", c.Format, keyArg("feature_attacks"))
	}
	if err := feature.Check(c.FeatureAttacks); err != nil {
		bad("%v (key feature_attacks)", err, keyArg("feature_attacks"))
	}
	switch c.Hijack {
	case "":
	case HijackFSHA:
	default:
		bad("unknown training hijacker %q (key hijack): the one built is %s", c.Hijack, HijackFSHA, keyArg("hijack"))
	}
	if c.FeatureAux < 0 || c.FeatureAux == 1 {
		bad("feature attacker's auxiliary rows %d, want at least 2 (key feature_aux)", c.FeatureAux, keyArg("feature_aux"))
	}
}

// SplitFeatures returns the passive party's and the active party's
// features of x under the configuration's vertical split: each party's
// named columns, and for a party whose list is empty the columns the
// other does not name. Without a split both are x. A name that is not a
// column of x is an error.
func (c *Config) SplitFeatures(x *data.Features) (passive, active *data.Features, err error) {
	if !c.VerticalSplit() || x == nil {
		return x, x, nil
	}
	pc, ac := c.PassiveColumns, c.ActiveColumns
	if len(pc) == 0 {
		pc = x.Complement(ac)
	}
	if len(ac) == 0 {
		ac = x.Complement(pc)
	}
	if passive, err = data.SelectColumns(x, pc); err != nil {
		return nil, nil, Keyed(fmt.Errorf("the passive party's columns (key passive_columns): %w", err), "passive_columns")
	}
	if active, err = data.SelectColumns(x, ac); err != nil {
		return nil, nil, Keyed(fmt.Errorf("the active party's columns (key active_columns): %w", err), "active_columns")
	}
	if passive.NumCat+passive.NumDense == 0 {
		return nil, nil, Keyed(fmt.Errorf("the vertical split leaves the passive party no column (key passive_columns)"), "passive_columns")
	}
	return passive, active, nil
}
