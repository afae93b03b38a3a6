package config

import (
	"math"
	"strings"
	"testing"
)

// TestCELUKeys checks that local_cache and local_weight_threshold are read
// and written, left out at their defaults, and refused where they cannot
// apply, naming the keys.
func TestCELUKeys(t *testing.T) {
	c := Default()
	c.SynthRows, c.Out = 1000, t.TempDir()
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "local_cache") || strings.Contains(string(b), "local_weight_threshold") {
		t.Fatalf("defaults written out:\n%s", b)
	}
	if err := DecodeYAML([]byte("local_steps: 4\nlocal_cache: 3\nlocal_weight_threshold: 0.25\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.LocalCache != 3 || c.LocalWeightThreshold == nil || *c.LocalWeightThreshold != 0.25 {
		t.Fatalf("read local_cache %d, local_weight_threshold %v; want 3, 0.25", c.LocalCache, c.LocalWeightThreshold)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid configuration refused: %v", err)
	}
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		staleness, local, cache int
		xi                      *float64
		want                    string
	}{
		{0, 4, -1, nil, "key local_cache: -1, want ≥ 1"},
		{0, 4, 2, f(1.5), "key local_weight_threshold: 1.5, want a cosine similarity in [-1, 1]"},
		{0, 4, 2, f(math.NaN()), "key local_weight_threshold: NaN"},
		{0, 1, 2, nil, "key local_cache and key local_weight_threshold shape the local updates: they need key local_steps > 1"},
		{0, 0, 0, f(0), "they need key local_steps > 1"},
		{2, 4, 2, nil, "key local_cache and key local_weight_threshold with key staleness 2"},
	} {
		c.Staleness, c.LocalSteps, c.LocalCache, c.LocalWeightThreshold = tc.staleness, tc.local, tc.cache, tc.xi
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("staleness %d, local_steps %d, local_cache %d: %v, want %q", tc.staleness, tc.local, tc.cache, err, tc.want)
		}
	}
}
