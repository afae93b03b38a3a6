package config

import (
	"slices"
	"strings"
	"testing"
)

// TestAutoWideDense checks key wide_dense's rule on hand-picked cases:
// standardised below AutoTinyRows (2,000) training rows when the learning
// rate is chosen from the data, the authors' min–max otherwise, and an
// explicit value always.
func TestAutoWideDense(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		edit func(*Config)
		want string
		auto bool // wide_dense listed in auto
	}{
		{"hmda's 1,929 rows", 1929, nil, WideDenseStandardised, true},
		{"just under two thousand", 1999, nil, WideDenseStandardised, true},
		{"two thousand", 2000, nil, WideDenseMinMax, true},
		{"ticdata's 7,990 rows", 7990, nil, WideDenseMinMax, true},
		{"learning rate given", 600, func(c *Config) { c.LR = 1e-3 }, WideDenseMinMax, true},
		{"explicit minmax wins", 600, func(c *Config) { c.WideDense = WideDenseMinMax }, WideDenseMinMax, false},
		{"explicit standardised wins", 50000, func(c *Config) { c.WideDense = WideDenseStandardised }, WideDenseStandardised, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Format, c.Data = "csv", "t.csv"
			if tc.edit != nil {
				tc.edit(&c)
			}
			c.ResolveForData(tc.n)
			if c.WideDense != tc.want {
				t.Errorf("wide_dense %q, want %q", c.WideDense, tc.want)
			}
			if got := slices.Contains(c.Auto, "wide_dense"); got != tc.auto {
				t.Errorf("wide_dense in auto %v, want %v (auto %v)", got, tc.auto, c.Auto)
			}
			if mc := c.ModelConfig(); mc.WideStandardise != (tc.want == WideDenseStandardised) {
				t.Errorf("model config WideStandardise %v for wide_dense %q", mc.WideStandardise, c.WideDense)
			}
			if tc.auto && !strings.Contains(c.AutoNote(), "wide_dense "+tc.want) {
				t.Errorf("the log's note %q does not give wide_dense", c.AutoNote())
			}
		})
	}
	c := Default()
	c.Out, c.WideDense = "o", "zscore"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "key wide_dense") || !strings.Contains(err.Error(), `"zscore"`) {
		t.Errorf("unknown wide_dense: %v", err)
	}
	img := Default()
	img.Format, img.Model = "isic", "cnn"
	img.ResolveForData(5000)
	if img.WideDense != "" {
		t.Errorf("a CNN run resolves wide_dense %q; it has no wide part", img.WideDense)
	}
}
