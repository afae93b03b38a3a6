package transport

import (
	"testing"

	"github.com/splitguard/splitguard/transport/wire"
)

// TestHelloMismatch: hand-written expectations of what two Hellos say
// about each other.
func TestHelloMismatch(t *testing.T) {
	fp := Fingerprint{CutDim: 4, BatchSize: 8, Seed: 7, Epochs: 2, ScheduleLength: 100, Digest: []byte{1, 2}}
	local := Hello{Party: "active", Config: fp}.WithDefaults()
	if local.Version != ProtocolVersion {
		t.Fatalf("WithDefaults: version %d, want %d", local.Version, ProtocolVersion)
	}
	if v := (Hello{Version: 1}).WithDefaults().Version; v != 1 {
		t.Errorf("WithDefaults changed a set version to %d", v)
	}
	other := fp
	other.BatchSize, other.Digest = 16, []byte{1, 3}
	bf16 := fp
	bf16.Wire = wire.Encodings{Embedding: wire.BF16}
	for _, tc := range []struct {
		name string
		peer Hello
		want string
	}{
		{"same, another name and ID format", Hello{Version: ProtocolVersion, Party: "passive", Config: fp, IDFormat: "decimal"}, ""},
		{"old version", Hello{Version: 1, Config: fp}, "protocol version 2 ≠ 1"},
		{"two fields", Hello{Version: ProtocolVersion, Config: other}, "config fingerprint differs: batch size 8 ≠ 16, digest 0102 ≠ 0103"},
		{"wire", Hello{Version: ProtocolVersion, Config: bf16}, "config fingerprint differs: wire encoding of embeddings (key wire_embedding) f32 ≠ bf16"},
	} {
		if got := local.Mismatch(tc.peer); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
