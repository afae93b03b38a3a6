package grpcnet

import (
	"context"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// TestEncodedExchange runs exchanges over a real connection in each pair
// of encodings: the active receives the rounded embedding the passive sent
// bit for bit, the passive the rounded gradient the active replied (at
// step 2 a gradient of mostly +0, which goes sparse where the encoding
// has a sparse packing, and then takes fewer bytes than dense), and the
// bytes the client counts equal WireBytes with the session's encodings.
func TestEncodedExchange(t *testing.T) {
	p := newPKI(t)
	for _, enc := range []wire.Encodings{{Embedding: wire.F16, Gradient: wire.BF16}, {Embedding: wire.Int8, Gradient: wire.Int8}, {Embedding: wire.BF16, Gradient: wire.F32}, {Embedding: wire.Int4, Gradient: wire.Int4}} {
		t.Run(enc.Embedding.String()+"-"+enc.Gradient.String(), func(t *testing.T) {
			c, got, sent := echoSession(t, p, enc, func(f *transport.Forward) *tensor.Matrix {
				g := tensor.New(f.Embedding.Rows, f.Embedding.Cols)
				for i, v := range f.Embedding.Data {
					if f.Step != 2 || i%16 == 0 { // step 2: sparsified, mostly +0
						g.Data[i] = -v/3 + 1e-3
					}
				}
				return g
			})
			ctx := context.Background()
			before := c.Stats()
			var fwd, bwd int64
			for step := range int64(3) {
				f := forward(transport.Train, step, int(step), 4, 5)
				for i := range f.Embedding.Data {
					f.Embedding.Data[i] = float32(math.Sin(float64(i)+float64(step))) * 7.1
				}
				if err := enc.Embedding.Round(f.Embedding); err != nil {
					t.Fatal(err)
				}
				b, err := c.Exchange(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if e := <-got; !sameBits(e, f.Embedding) {
					t.Errorf("step %d: the active received %v, the passive sent %v", step, e.Data, f.Embedding.Data)
				}
				if g := <-sent; !sameBits(g, b.Grad) {
					t.Errorf("step %d: the passive received %v, the active sent %v", step, b.Grad.Data, g.Data)
				}
				nf, nb, err := WireBytes(f, b, enc)
				if err != nil {
					t.Fatal(err)
				}
				fwd, bwd = fwd+nf, bwd+nb
				if dense := int64(enc.Gradient.Size(4, 5)); step == 2 && enc.Gradient.Sparse() && nb >= dense {
					t.Errorf("a gradient of 2 values in 20 took %d bytes, its dense values alone %d", nb, dense)
				}
			}
			after := c.Stats()
			if after.BytesSent-before.BytesSent != fwd || after.BytesReceived-before.BytesReceived != bwd {
				t.Errorf("client counted %d/%d bytes, WireBytes says %d/%d", after.BytesSent-before.BytesSent, after.BytesReceived-before.BytesReceived, fwd, bwd)
			}
		})
	}
}

// echoSession starts an active server and a passive client in a session
// of fp with the encodings enc, after Hello. The server answers each
// Train exchange with grad of it, rounded in enc.Gradient; it passes the
// embedding it received on got and the gradient it sent on sent (each
// buffered one deep: read both once per exchange).
func echoSession(t *testing.T, p testPKI, enc wire.Encodings, grad func(*transport.Forward) *tensor.Matrix) (c *Client, got, sent chan *tensor.Matrix) {
	t.Helper()
	local := fp
	local.Wire = enc
	s := startServer(t, ServerOptions{TLS: p.server(t), Local: Hello{Party: "active", Config: local}})
	got, sent = make(chan *tensor.Matrix, 1), make(chan *tensor.Matrix, 1)
	go func() {
		for {
			f, err := s.Recv(context.Background())
			if err != nil {
				return
			}
			got <- f.Embedding.Clone()
			g := grad(f)
			if err := enc.Gradient.Round(g); err != nil {
				panic(err)
			}
			sent <- g.Clone()
			if s.Reply(context.Background(), &transport.Backward{Step: f.Step, Batch: f.Batch, Grad: g}) != nil {
				return
			}
		}
	}()
	c = dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	if _, err := c.Hello(context.Background(), Hello{Party: "passive", Config: local}); err != nil {
		t.Fatal(err)
	}
	return c, got, sent
}

func sameBits(a, b *tensor.Matrix) bool {
	if a.Rows != b.Rows || a.Cols != b.Cols {
		return false
	}
	for i := range a.Data {
		if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
			return false
		}
	}
	return true
}

// TestEncodedSizeByHand counts a 1024×128 tensor's protobuf encoding by
// hand: rows 1024 (tag 1 + varint 2), cols 128 (1 + 2), the payload's tag,
// length varint (3 bytes for 2^14 ≤ n < 2^21) and bytes, and for a packed
// encoding its enum field (1 + 1). The payloads are 524,288 bytes (f32),
// 262,144 (f16, bf16), 131,072 + 4,096 scale bytes (int8) and 65,536 +
// 4,096 (int4).
func TestEncodedSizeByHand(t *testing.T) {
	m := tensor.New(1024, 128)
	for i := range m.Data {
		m.Data[i] = float32(i%255) - 127
	}
	for _, tc := range []struct {
		enc  wire.Encoding
		want int
	}{
		{wire.F32, 3 + 3 + 1 + 3 + 524288},
		{wire.F16, 3 + 3 + 1 + 3 + 262144 + 2},
		{wire.BF16, 3 + 3 + 1 + 3 + 262144 + 2},
		{wire.Int8, 3 + 3 + 1 + 3 + 131072 + 4096 + 2},
		{wire.Int4, 3 + 3 + 1 + 3 + 65536 + 4096 + 2},
	} {
		r := m.Clone()
		if err := tc.enc.Round(r); err != nil {
			t.Fatal(err)
		}
		pt, err := encodeTensor(r, tc.enc, wire.None)
		if err != nil {
			t.Fatal(err)
		}
		if got := proto.Size(pt); got != tc.want {
			t.Errorf("%v: a 1024×128 tensor takes %d bytes, want %d", tc.enc, got, tc.want)
		}
	}
	// One training exchange at batch 1024 and a 128-wide cut, for the
	// record (logged with -v): the messages' bytes in each encoding.
	ids := make([]uint64, 1024)
	for i := range ids {
		ids[i] = uint64(1e9) + uint64(i)
	}
	for _, enc := range []wire.Encoding{wire.F32, wire.F16, wire.BF16, wire.Int8, wire.Int4} {
		e := m.Clone()
		if err := enc.Round(e); err != nil {
			t.Fatal(err)
		}
		nf, nb, err := WireBytes(&transport.Forward{Phase: transport.Train, Step: 1000, Batch: 7, IDs: ids, Embedding: e},
			&transport.Backward{Step: 1000, Batch: 7, Grad: e}, wire.Encodings{Embedding: enc, Gradient: enc})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("batch 1024, cut 128, %v both ways: forward %d bytes, backward %d bytes, %d per step", enc, nf, nb, nf+nb)
	}
	// The small messages of TestWireBytesByHand in f16, int8 and int4: a
	// 2×3 tensor is rows 2 + cols 2 + encoding 2 + packed (1+1+12 for f16,
	// 1+1+2·(4+3) for int8, 1+1+2·(4+2) for int4), as a field 2 bytes more; the Forward adds
	// phase, step, batch (2 each) and ids (5), the Backward step and
	// batch (2 each); gRPC 5 bytes each.
	ones := tensor.New(2, 3) // no zero: packed dense
	for i := range ones.Data {
		ones.Data[i] = 1
	}
	f := &transport.Forward{Phase: transport.Train, Step: 3, Batch: 2, IDs: []uint64{1, 300}, Embedding: ones}
	b := &transport.Backward{Step: 3, Batch: 2, Grad: ones}
	for _, tc := range []struct {
		enc      wire.Encodings
		fwd, bwd int64
	}{
		{wire.Encodings{Embedding: wire.F16, Gradient: wire.Int8}, 11 + 2 + 20 + 5, 4 + 2 + 22 + 5},
		{wire.Encodings{Embedding: wire.Int8, Gradient: wire.BF16}, 11 + 2 + 22 + 5, 4 + 2 + 20 + 5},
		{wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int4}, 11 + 2 + 20 + 5, 4 + 2 + 20 + 5},
	} {
		nf, nb, err := WireBytes(f, b, tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		if nf != tc.fwd || nb != tc.bwd {
			t.Errorf("%+v: WireBytes = %d, %d, want %d, %d", tc.enc, nf, nb, tc.fwd, tc.bwd)
		}
	}
}

// TestEncodingRefusals checks that the transport refuses what it cannot
// send or accept: an embedding not rounded to the session's encoding
// (packing would lose information), a tensor in another encoding than
// the one agreed, and a payload whose length does not match the shape.
func TestEncodingRefusals(t *testing.T) {
	f := forward(transport.Train, 0, 0, 2, 3)
	f.Embedding.Data[1] = 1 + 1.0/(1<<20)
	if _, err := encodeForward(f, wire.F16, wire.None); err == nil || !strings.Contains(err.Error(), "not a float16 value") {
		t.Errorf("an unrounded embedding packed as f16: %v", err)
	}
	g := forward(transport.Train, 0, 0, 2, 3)
	m, err := encodeForward(g, wire.BF16, wire.None)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeForward(m, 1<<16, wire.F16, wire.None); err == nil || !strings.Contains(err.Error(), "encoding bf16, the session agreed on f16") {
		t.Errorf("a bf16 embedding in an f16 session: %v", err)
	}
	m.Embedding.Packed = m.Embedding.Packed[:10]
	if _, err := decodeForward(m, 1<<16, wire.BF16, wire.None); err == nil || !strings.Contains(err.Error(), "needs 12 bytes, got 10") {
		t.Errorf("a short bf16 payload: %v", err)
	}
	m.Embedding.Encoding = 7
	if _, err := decodeForward(m, 1<<16, wire.BF16, wire.None); err == nil || !strings.Contains(err.Error(), "unknown encoding 7") {
		t.Errorf("an unknown encoding: %v", err)
	}
	// −252 is 4 (int4) modulo 256: a negative number must not wrap onto
	// an encoding the session agreed on.
	m.Embedding.Encoding = -252
	if _, err := decodeForward(m, 1<<16, wire.Int4, wire.None); err == nil || !strings.Contains(err.Error(), "unknown encoding -252") {
		t.Errorf("a negative encoding: %v", err)
	}
}

// TestHelloNamesWireKey checks that peers whose encodings differ are
// refused at Hello with a reason naming the configuration key.
func TestHelloNamesWireKey(t *testing.T) {
	p := newPKI(t)
	local := fp
	local.Wire = wire.Encodings{Embedding: wire.F16}
	s := startServer(t, ServerOptions{TLS: p.server(t), Local: Hello{Party: "active", Config: local}})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	other := fp
	other.Wire = wire.Encodings{Gradient: wire.Int8}
	_, err := c.Hello(context.Background(), Hello{Party: "passive", Config: other})
	if err == nil {
		t.Fatal("Hello accepted differing encodings")
	}
	for _, want := range []string{"key wire_embedding) f16 ≠ f32", "key wire_gradient) f32 ≠ int8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Hello refusal %q does not say %q", err, want)
		}
	}
}

// TestHelloRefusesInt4AgainstInt8: a peer sending int4 embeddings to one
// that agreed on int8 (and the reverse for gradients) is refused at
// Hello, both keys named with the two encodings.
func TestHelloRefusesInt4AgainstInt8(t *testing.T) {
	p := newPKI(t)
	local := fp
	local.Wire = wire.Encodings{Embedding: wire.Int8, Gradient: wire.Int4}
	s := startServer(t, ServerOptions{TLS: p.server(t), Local: Hello{Party: "active", Config: local}})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	other := fp
	other.Wire = wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int8}
	_, err := c.Hello(context.Background(), Hello{Party: "passive", Config: other})
	if err == nil {
		t.Fatal("Hello accepted int4 against int8")
	}
	for _, want := range []string{"key wire_embedding) int8 ≠ int4", "key wire_gradient) int4 ≠ int8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Hello refusal %q does not say %q", err, want)
		}
	}
}
