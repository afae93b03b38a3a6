package netrun

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsNonLoopbackRefused: the unauthenticated metrics endpoint on
// a non-loopback address is refused unless key metrics_public is set (it
// used to serve label-derived figures to the network without a word).
func TestMetricsNonLoopbackRefused(t *testing.T) {
	root := t.TempDir()
	act, _ := partyConfigs(smallConfig(filepath.Join(root, "d.txt"), root), root, root)
	for _, tc := range []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:9100", false, true},
		{"localhost:9100", false, true},
		{"0.0.0.0:9100", false, false},
		{"10.1.2.3:9100", false, false},
		{":9100", false, false},
		{"0.0.0.0:9100", true, true},
	} {
		c := act
		c.MetricsAddr, c.MetricsPublic = tc.addr, tc.public
		err := c.validate("active")
		refused := err != nil && strings.Contains(err.Error(), "key metrics_addr")
		if refused == tc.ok {
			t.Errorf("metrics_addr %s, metrics_public %v: %v", tc.addr, tc.public, err)
		}
	}
}
