package config

import (
	"strings"
	"testing"
)

// TestOverlapKeys checks the keys staleness and local_steps: left out of
// config.yaml at their defaults (so the exact protocol's configuration is
// unchanged), read from YAML and written back, and out-of-range values
// refused naming the key.
func TestOverlapKeys(t *testing.T) {
	c := Default()
	c.SynthRows, c.Out = 100, t.TempDir()
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "staleness") || strings.Contains(string(b), "local_steps") {
		t.Errorf("the defaults are written to config.yaml:\n%s", b)
	}
	if err := DecodeYAML([]byte("staleness: 2\nlocal_steps: 3\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Staleness != 2 || c.LocalSteps != 3 {
		t.Fatalf("read staleness %d, local_steps %d; want 2, 3", c.Staleness, c.LocalSteps)
	}
	if b, err = Marshal(&c); err != nil || !strings.Contains(string(b), "\nstaleness: 2\n") || !strings.Contains(string(b), "\nlocal_steps: 3\n") {
		t.Errorf("config.yaml does not record them (%v):\n%s", err, b)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid configuration refused: %v", err)
	}
	for _, tc := range []struct {
		staleness, local int
		want             string
	}{
		{-1, 1, "key staleness: -1, want 0 to 63"},
		{64, 1, "key staleness: 64, want 0 to 63"},
		{0, -2, "key local_steps: -2, want ≥ 1"},
	} {
		c.Staleness, c.LocalSteps = tc.staleness, tc.local
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("staleness %d, local_steps %d: %v, want %q", tc.staleness, tc.local, err, tc.want)
		}
	}
}

// TestStalenessPredictionKey checks the key staleness_prediction: left out
// of config.yaml at 0, read and written back, and refused out of range or
// without staleness, naming the keys.
func TestStalenessPredictionKey(t *testing.T) {
	c := Default()
	c.SynthRows, c.Out = 100, t.TempDir()
	if b, err := Marshal(&c); err != nil || strings.Contains(string(b), "staleness_prediction") {
		t.Errorf("the default is written to config.yaml (%v):\n%s", err, b)
	}
	if err := DecodeYAML([]byte("staleness: 4\nstaleness_prediction: 2\n"), &c); err != nil {
		t.Fatal(err)
	}
	if b, err := Marshal(&c); err != nil || !strings.Contains(string(b), "\nstaleness_prediction: 2\n") {
		t.Errorf("config.yaml does not record it (%v):\n%s", err, b)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("a valid configuration refused: %v", err)
	}
	for _, tc := range []struct {
		staleness  int
		prediction float64
		want       string
	}{
		{4, -1, "key staleness_prediction: -1, want 0 to 16"},
		{4, 17, "key staleness_prediction: 17, want 0 to 16"},
		{0, 1, "key staleness_prediction needs key staleness > 0"},
	} {
		c.Staleness, c.StalenessPrediction = tc.staleness, tc.prediction
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("staleness %d, staleness_prediction %v: %v, want %q", tc.staleness, tc.prediction, err, tc.want)
		}
	}
}
