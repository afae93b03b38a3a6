package wire

import (
	"strings"
	"testing"
)

// TestParseCompression checks the names, their wire numbers and the
// refusal of an unknown one.
func TestParseCompression(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Compression
		num  uint8 // proto enum Compression
	}{{"none", None, 0}, {"zstd", Zstd, 1}} {
		c, err := ParseCompression(tc.name)
		if err != nil || c != tc.want || uint8(c) != tc.num || c.String() != tc.name || !c.Valid() {
			t.Errorf("ParseCompression(%q) = %v (%d), %v", tc.name, c, uint8(c), err)
		}
	}
	if _, err := ParseCompression("gzip"); err == nil || !strings.Contains(err.Error(), "none, zstd") {
		t.Errorf("ParseCompression(gzip): %v, want an error listing the compressions", err)
	}
	if c := Compression(2); c.Valid() || c.String() != "compression(2)" {
		t.Errorf("Compression(2): valid %t, %q", c.Valid(), c.String())
	}
	if var0 := (Encodings{}); var0.Compression != None {
		t.Errorf("zero Encodings compress with %v", var0.Compression)
	}
}
