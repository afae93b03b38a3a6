package netrun

import (
	"bytes"
	"testing"
)

// TestDigestCoversSplitSeed: two parties with different split_seed would
// split the rows differently, so the digest differs.
func TestDigestCoversSplitSeed(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "d", "o", "127.0.0.1:0", true
	plain := c
	c.SplitSeed = 7
	if bytes.Equal(plain.SharedDigest(), c.SharedDigest()) {
		t.Error("the digest ignores split_seed")
	}
}
