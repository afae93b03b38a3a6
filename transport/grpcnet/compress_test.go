package grpcnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	"github.com/splitguard/splitguard/pki"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// reluLike returns a rows×cols tensor of a few repeating values
// (compressible), one in 13 of them +0 (too few for a sparse packing),
// rounded to enc. With sparse, all but every 16th value is +0.
func reluLike(t testing.TB, rows, cols int, enc wire.Encoding, sparse bool) *tensor.Matrix {
	m := tensor.New(rows, cols)
	for i := range m.Data {
		v := float32((i*7)%13) * 0.25
		if sparse && i%16 != 0 {
			v = 0
		}
		m.Data[i] = v
	}
	if err := enc.Round(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// unpackPlain decodes an uncompressed wire tensor with the codec's own
// unpacking (wire.Encoding.Unpack, UnpackSparse, little-endian float32),
// not with decodeTensor.
func unpackPlain(t *testing.T, p *pb.Tensor) *tensor.Matrix {
	t.Helper()
	enc, rows, cols := wire.Encoding(p.GetEncoding()), int(p.GetRows()), int(p.GetCols())
	var m *tensor.Matrix
	var err error
	switch {
	case p.GetSparse():
		m, err = enc.UnpackSparse(nil, rows, cols, p.GetPacked(), p.GetIndex())
	case enc != wire.F32:
		m, err = enc.Unpack(nil, rows, cols, p.GetPacked())
	default:
		m = tensor.New(rows, cols)
		for i := range m.Data {
			m.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(p.GetLeF32()[4*i:]))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompressedRoundTrip: every encoding, dense and (where it has one)
// sparse, compressed with zstd decodes to the values the uncompressed
// tensor unpacks to, bit for bit; the compressed tensor is marked so and
// smaller, its frames decode (with the zstd package directly) to the
// uncompressed fields, and a session without zstd refuses it.
func TestCompressedRoundTrip(t *testing.T) {
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, enc := range encodings {
		for _, sparse := range []bool{false, true} {
			if sparse && !enc.Sparse() {
				continue
			}
			m := reluLike(t, 256, 64, enc, sparse)
			plain, err := encodeTensor(m, enc, wire.None)
			if err != nil {
				t.Fatal(err)
			}
			z, err := encodeTensor(m, enc, wire.Zstd)
			if err != nil {
				t.Fatal(err)
			}
			name := enc.String()
			if sparse {
				name += " sparse"
			}
			if plain.GetSparse() != sparse || z.GetSparse() != sparse {
				t.Fatalf("%s: sparse %t/%t", name, plain.GetSparse(), z.GetSparse())
			}
			if z.GetCompression() != pb.Compression_COMPRESSION_ZSTD || proto.Size(z) >= proto.Size(plain) {
				t.Errorf("%s: compression %v, %d bytes against %d uncompressed", name, z.GetCompression(), proto.Size(z), proto.Size(plain))
			}
			for _, f := range [][2][]byte{{z.GetLeF32(), plain.GetLeF32()}, {z.GetPacked(), plain.GetPacked()}, {z.GetIndex(), plain.GetIndex()}} {
				if len(f[1]) == 0 {
					if len(f[0]) != 0 {
						t.Errorf("%s: an empty field compressed to %d bytes", name, len(f[0]))
					}
					continue
				}
				if got, err := dec.DecodeAll(f[0], nil); err != nil || !bytes.Equal(got, f[1]) {
					t.Errorf("%s: a frame decodes to %d bytes (%v), the field holds %d", name, len(got), err, len(f[1]))
				}
			}
			want := unpackPlain(t, plain)
			got, err := decodeTensor(z, 1<<20, name, enc, wire.Zstd)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !sameBits(got, want) || !sameBits(got, m) {
				t.Errorf("%s: the compressed tensor decodes to other values", name)
			}
			if _, err := decodeTensor(z, 1<<20, name, enc, wire.None); err == nil || !strings.Contains(err.Error(), "compression zstd, the session agreed on none") {
				t.Errorf("%s: a compressed tensor in a session without compression: %v", name, err)
			}
		}
	}
}

// TestCompressionRefusedWhenLarger: a 1×4 float32 tensor of distinct
// values (16 bytes) gains nothing from a frame (its header alone takes
// several bytes), so it is sent as packed: compression NONE and le_f32
// the four values in little-endian order, written out by hand.
func TestCompressionRefusedWhenLarger(t *testing.T) {
	m := tensor.New(1, 4)
	copy(m.Data, []float32{1, -2, 0.5, 3})
	z, err := encodeTensor(m, wire.F32, wire.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0, 0x3f, 0, 0, 0x40, 0x40}
	if z.GetCompression() != pb.Compression_COMPRESSION_NONE || !bytes.Equal(z.GetLeF32(), want) {
		t.Errorf("compression %v, le_f32 % x; want none and % x", z.GetCompression(), z.GetLeF32(), want)
	}
	if got, err := decodeTensor(z, 16, "t", wire.F32, wire.Zstd); err != nil || !sameBits(got, m) {
		t.Errorf("decoded %v, %v", got, err)
	}
}

// frame compresses b with a fresh zstd encoder as one single-segment
// frame; stream writes it as a stream, without a content size.
func frame(t *testing.T, b []byte, stream bool) []byte {
	t.Helper()
	if !stream {
		e, err := zstd.NewWriter(nil, zstd.WithSingleSegment(true))
		if err != nil {
			t.Fatal(err)
		}
		return e.EncodeAll(b, nil)
	}
	var out bytes.Buffer
	e, err := zstd.NewWriter(&out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestCompressedRefusals: frames that would decode to more than the
// tensor's shape allows (a bomb: 16 MiB of zeros declared, or two frames
// each of the allowed size), frames without a content size, corrupt and
// truncated frames, a frame decoding to fewer bytes than the shape needs
// and an unknown compression are errors naming the tensor, never a panic.
func TestCompressedRefusals(t *testing.T) {
	m := reluLike(t, 8, 8, wire.Int8, false) // packed: 8·(4+8) = 96 bytes
	good, err := encodeTensor(m, wire.Int8, wire.None)
	if err != nil {
		t.Fatal(err)
	}
	ok := frame(t, good.GetPacked(), false)
	corrupt := append([]byte(nil), ok...)
	corrupt[len(corrupt)/2] ^= 0xff
	corrupt[len(corrupt)-1] ^= 0x55
	for _, tc := range []struct {
		name   string
		packed []byte
		comp   pb.Compression
		want   string
	}{
		{"bomb", frame(t, make([]byte, 16<<20), false), pb.Compression_COMPRESSION_ZSTD, "declares 16777216 bytes, the shape allows at most 96"},
		{"two frames", append(append([]byte(nil), ok...), ok...), pb.Compression_COMPRESSION_ZSTD, "zstd"},
		{"no content size", frame(t, good.GetPacked(), true), pb.Compression_COMPRESSION_ZSTD, "without a content size or not single-segment"},
		{"corrupt", corrupt, pb.Compression_COMPRESSION_ZSTD, "zstd"},
		{"truncated", ok[:len(ok)-3], pb.Compression_COMPRESSION_ZSTD, "zstd"},
		{"not a frame", good.GetPacked(), pb.Compression_COMPRESSION_ZSTD, "zstd frame header"},
		{"short", frame(t, good.GetPacked()[:90], false), pb.Compression_COMPRESSION_ZSTD, "needs 96 bytes, got 90"},
		{"unknown", ok, 7, "unknown compression 7"},
	} {
		p := &pb.Tensor{Rows: 8, Cols: 8, Encoding: pb.Encoding_ENCODING_INT8, Packed: tc.packed, Compression: tc.comp}
		_, err := decodeTensor(p, 1<<20, "the embedding", wire.Int8, wire.Zstd)
		if err == nil || !strings.HasPrefix(err.Error(), "the embedding: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming the embedding and saying %q", tc.name, err, tc.want)
		}
	}
	// The same frame, well formed, is accepted.
	p := &pb.Tensor{Rows: 8, Cols: 8, Encoding: pb.Encoding_ENCODING_INT8, Packed: ok, Compression: pb.Compression_COMPRESSION_ZSTD}
	if got, err := decodeTensor(p, 1<<20, "the embedding", wire.Int8, wire.Zstd); err != nil || !sameBits(got, m) {
		t.Errorf("a well-formed frame: %v", err)
	}
}

// TestCompressConcurrently encodes and decodes from several goroutines
// at once (run with -race): the shared encoder, decoder and buffers give
// every goroutine its own tensor back.
func TestCompressConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				m := reluLike(t, 32+g, 16+i%3, wire.Int4, false)
				z, err := encodeTensor(m, wire.Int4, wire.Zstd)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := decodeTensor(z, 1<<20, "t", wire.Int4, wire.Zstd)
				if err != nil || !sameBits(got, m) {
					t.Errorf("goroutine %d round %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestCompressedExchange runs int4 exchanges of 256×32 ReLU-like
// embeddings and gradients over a real connection in a session agreed on
// zstd: both sides receive what the other sent bit for bit, the client's
// byte counts equal WireBytes with compression, and these are smaller
// than WireBytes without it.
func TestCompressedExchange(t *testing.T) {
	p := newPKI(t)
	enc := wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int4, Compression: wire.Zstd}
	c, got, sent := echoSession(t, p, enc, func(f *transport.Forward) *tensor.Matrix {
		g := f.Embedding.Clone()
		for i := range g.Data {
			g.Data[i] = -g.Data[i] / 3
		}
		return g
	})
	ctx := context.Background()
	before := c.Stats()
	var fwd, bwd, rawFwd, rawBwd int64
	for step := range int64(3) {
		f := forward(transport.Train, step, int(step), 256, 32)
		f.Embedding = reluLike(t, 256, 32, enc.Embedding, false)
		b, err := c.Exchange(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if e := <-got; !sameBits(e, f.Embedding) {
			t.Errorf("step %d: the active received another embedding than the passive sent", step)
		}
		if g := <-sent; !sameBits(g, b.Grad) {
			t.Errorf("step %d: the passive received another gradient than the active sent", step)
		}
		nf, nb, err := WireBytes(f, b, enc)
		if err != nil {
			t.Fatal(err)
		}
		plain := enc
		plain.Compression = wire.None
		rf, rb, err := WireBytes(f, b, plain)
		if err != nil {
			t.Fatal(err)
		}
		fwd, bwd, rawFwd, rawBwd = fwd+nf, bwd+nb, rawFwd+rf, rawBwd+rb
	}
	after := c.Stats()
	if after.BytesSent-before.BytesSent != fwd || after.BytesReceived-before.BytesReceived != bwd {
		t.Errorf("client counted %d/%d bytes, WireBytes says %d/%d", after.BytesSent-before.BytesSent, after.BytesReceived-before.BytesReceived, fwd, bwd)
	}
	if fwd >= rawFwd || bwd >= rawBwd {
		t.Errorf("compressed %d/%d bytes, uncompressed %d/%d", fwd, bwd, rawFwd, rawBwd)
	}
	t.Logf("int4 256×32, 3 exchanges: forward %d → %d bytes, backward %d → %d", rawFwd, fwd, rawBwd, bwd)
}

// TestHelloNamesCompressionKey: peers that disagree on the compression
// are refused at Hello, naming the key and both values.
func TestHelloNamesCompressionKey(t *testing.T) {
	p := newPKI(t)
	local := fp
	local.Wire = wire.Encodings{Embedding: wire.Int4, Gradient: wire.Int4, Compression: wire.Zstd}
	s := startServer(t, ServerOptions{TLS: p.server(t), Local: Hello{Party: "active", Config: local}})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	other := local
	other.Wire.Compression = wire.None
	_, err := c.Hello(context.Background(), Hello{Party: "passive", Config: other})
	if err == nil || !strings.Contains(err.Error(), "wire compression (key wire_compression) zstd ≠ none") {
		t.Fatalf("Hello refusal %v, want one naming key wire_compression", err)
	}
	if strings.Contains(err.Error(), "wire_embedding") || strings.Contains(err.Error(), "wire_gradient") {
		t.Errorf("Hello refusal %q names an encoding key that agrees", err)
	}
}
