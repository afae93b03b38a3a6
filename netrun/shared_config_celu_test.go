package netrun

import (
	"bytes"
	"testing"
)

// TestCELUDigest checks that CELU-VFL's keys are settings both parties
// must share: the digest is unchanged with them off and differs with each
// value, so parties that disagree are refused at Hello.
func TestCELUDigest(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "d", "o", "127.0.0.1:0", true
	c.LocalSteps = 3
	plain := c
	one := c
	one.LocalCache = 1
	if !bytes.Equal(plain.SharedDigest(), one.SharedDigest()) {
		t.Error("local_cache 1 (FedBCD) changed the digest")
	}
	xi, xi2 := 0.5, 0.25
	variants := []func(*Config){
		func(c *Config) { c.LocalCache = 2 },
		func(c *Config) { c.LocalCache = 3 },
		func(c *Config) { c.LocalCache, c.LocalWeightThreshold = 3, &xi },
		func(c *Config) { c.LocalCache, c.LocalWeightThreshold = 3, &xi2 },
		func(c *Config) { c.LocalWeightThreshold = &xi },
	}
	seen := [][]byte{plain.SharedDigest()}
	for i, f := range variants {
		v := c
		f(&v)
		d := v.SharedDigest()
		for j, s := range seen {
			if bytes.Equal(d, s) {
				t.Errorf("variant %d has the digest of variant %d", i, j-1)
			}
		}
		seen = append(seen, d)
	}
}

// TestStalenessPredictionDigest checks that linear weight prediction is a
// setting the parties must share: each factor has its own digest.
func TestStalenessPredictionDigest(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "d", "o", "127.0.0.1:0", true
	c.Staleness = 4
	plain := c.SharedDigest()
	seen := [][]byte{plain}
	for _, f := range []float64{1, 2, 2.5} {
		v := c
		v.StalenessPrediction = f
		d := v.SharedDigest()
		for _, s := range seen {
			if bytes.Equal(d, s) {
				t.Errorf("factor %g: the digest of another setting", f)
			}
		}
		seen = append(seen, d)
	}
}
