package netrun

import (
	"bytes"
	"testing"
)

// FuzzPackZeros checks that packing any bytes and unpacking them gives
// them back, and that unpacking arbitrary input never panics.
func FuzzPackZeros(f *testing.F) {
	f.Add([]byte{}, []byte{0, 4})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, []byte{1, 1, 9})
	f.Add(bytes.Repeat([]byte{0}, 40), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, src, junk []byte) {
		got, err := unpackZeros(packZeros(nil, src), uint64(len(src)))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip of %v: %v, %v", src, got, err)
		}
		_, _ = unpackZeros(junk, uint64(len(src)))
	})
}
