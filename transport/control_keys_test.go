package transport

import (
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/transport/wire"
)

// TestMismatchKeys: the keys a Hello mismatch names are the wire
// encodings' and compression's (each once, when it differs), none when only settings
// without a key of their own differ or when the protocol versions differ
// (the mismatch then names the version alone); each key is named in the
// mismatch's text.
func TestMismatchKeys(t *testing.T) {
	base := Hello{Version: ProtocolVersion, Config: Fingerprint{CutDim: 4, BatchSize: 8, Wire: wire.Encodings{Embedding: wire.F32, Gradient: wire.F32}}}
	for _, tc := range []struct {
		name string
		edit func(*Hello)
		want []string
	}{
		{"same", func(*Hello) {}, nil},
		{"batch", func(h *Hello) { h.Config.BatchSize = 16 }, nil},
		{"gradient", func(h *Hello) { h.Config.Wire.Gradient = wire.Int8 }, []string{"wire_gradient"}},
		{"both", func(h *Hello) { h.Config.Wire = wire.Encodings{Embedding: wire.F16, Gradient: wire.BF16} }, []string{"wire_embedding", "wire_gradient"}},
		{"compression", func(h *Hello) { h.Config.Wire.Compression = wire.Zstd }, []string{"wire_compression"}},
		{"all three", func(h *Hello) {
			h.Config.Wire = wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int4, Compression: wire.Zstd}
		}, []string{"wire_embedding", "wire_gradient", "wire_compression"}},
		{"version", func(h *Hello) { h.Version++; h.Config.Wire.Gradient = wire.Int8 }, nil},
	} {
		peer := base
		tc.edit(&peer)
		got := base.MismatchKeys(peer)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: keys %v, want %v", tc.name, got, tc.want)
		}
		for _, k := range got {
			if m := base.Mismatch(peer); !strings.Contains(m, "key "+k) {
				t.Errorf("%s: mismatch %q does not name key %s", tc.name, m, k)
			}
		}
	}
}
