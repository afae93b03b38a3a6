package grpcnet

import (
	"context"
	"testing"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// TestWireBytesMatchesStats checks WireBytes against what a real
// connection counts: the client's bytes sent and received over a run of
// exchanges equal the sum of WireBytes of its messages and answers.
func TestWireBytesMatchesStats(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, ServerOptions{TLS: p.server(t)})
	runEcho(s, nil)
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	msgs := []*transport.Forward{
		forward(transport.Train, 0, 0, 8, 4),
		forward(transport.Train, 1, 1, 3, 16),
		forward(transport.Eval, 2, 0, 5, 4),
	}
	msgs[2].Last = true
	before := c.Stats()
	var fwd, bwd int64
	for _, f := range msgs {
		b, err := c.Exchange(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		nf, nb, err := WireBytes(f, b, wire.Encodings{})
		if err != nil {
			t.Fatal(err)
		}
		fwd, bwd = fwd+nf, bwd+nb
	}
	after := c.Stats()
	if got := after.BytesSent - before.BytesSent; got != fwd {
		t.Errorf("client sent %d bytes, WireBytes says %d", got, fwd)
	}
	if got := after.BytesReceived - before.BytesReceived; got != bwd {
		t.Errorf("client received %d bytes, WireBytes says %d", got, bwd)
	}
}

// TestWireBytesByHand checks WireBytes on messages whose protobuf encoding
// is counted by hand from proto/splitguard.proto: a field costs its tag
// (1 byte for numbers < 16) plus a varint, or a length varint and its
// bytes; proto3 leaves zero values out; gRPC adds 5 bytes per message.
func TestWireBytesByHand(t *testing.T) {
	dense := func() *tensor.Matrix { // no zero: packed dense
		m := tensor.New(2, 3)
		for i := range m.Data {
			m.Data[i] = float32(i + 1)
		}
		return m
	}
	emb := dense() // Tensor: rows 2+cols 2+le_f32 (1+1+24) = 30; as field 7: 1+1+30 = 32
	sparse := tensor.New(2, 3)
	sparse.Data[4] = 1.5
	f := &transport.Forward{Phase: transport.Train, Step: 3, Batch: 2, IDs: []uint64{1, 300}, Embedding: emb}
	tests := []struct {
		name     string
		f        *transport.Forward
		b        *transport.Backward
		fwd, bwd int64
	}{
		// Forward: phase 2 + step 2 + batch 2 + ids (1+1+1+2) 5 + embedding 32 = 43.
		// Backward: step 2 + batch 2 + grad 32 = 36.
		{"train", f, &transport.Backward{Step: 3, Batch: 2, Grad: dense()}, 43 + 5, 36 + 5},
		// Step 0 and batch 0 are left out: 43−4 and 36−4.
		{"step 0", &transport.Forward{Phase: transport.Train, IDs: f.IDs, Embedding: emb},
			&transport.Backward{Grad: dense()}, 39 + 5, 32 + 5},
		// An evaluation's answer has no gradient: step 2 + batch 2.
		// A gradient with one value that is not +0 goes sparse: rows 2 + cols 2
		// + packed (1+1+4) + sparse 2 + index (1+1+1: position 4) = 15, as
		// field 3: 17; Backward: step 2 + batch 2 + 17 = 21.
		{"sparse", f, &transport.Backward{Step: 3, Batch: 2, Grad: sparse}, 43 + 5, 21 + 5},
		{"eval", &transport.Forward{Phase: transport.Eval, Step: 3, Batch: 2, Last: true, IDs: f.IDs, Embedding: emb},
			&transport.Backward{Step: 3, Batch: 2}, 43 + 2 + 5, 4 + 5},
	}
	for _, tc := range tests {
		fwd, bwd, err := WireBytes(tc.f, tc.b, wire.Encodings{})
		if err != nil {
			t.Fatal(err)
		}
		if fwd != tc.fwd || bwd != tc.bwd {
			t.Errorf("%s: WireBytes = %d, %d, want %d, %d", tc.name, fwd, bwd, tc.fwd, tc.bwd)
		}
	}
}
