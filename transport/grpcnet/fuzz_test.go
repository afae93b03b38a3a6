package grpcnet

import (
	"math"
	"testing"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// encodings lists every wire encoding, for the fuzz targets.
var encodings = []wire.Encoding{wire.F32, wire.F16, wire.BF16, wire.Int8, wire.Int4}

// rounded returns f with its embedding rounded to enc, as a passive
// party sends it.
func rounded(tb testing.TB, f *transport.Forward, enc wire.Encoding) *transport.Forward {
	if err := enc.Round(f.Embedding); err != nil {
		tb.Fatal(err)
	}
	return f
}

// FuzzDecodeForward feeds arbitrary wire bytes to the server's Forward
// decoding, expecting each encoding in turn: an error or a message with
// one ID per row of a finite embedding, never a panic, and never a tensor
// in an encoding other than the one expected.
func FuzzDecodeForward(f *testing.F) {
	m, err := encodeForward(forward(transport.Train, 3, 1, 2, 3), wire.F32, wire.None)
	if err != nil {
		f.Fatal(err)
	}
	b, _ := proto.Marshal(m)
	f.Add(b)
	m.Embedding.LeF32, m.Embedding.Values = nil, []float32{1, 2, 3, 4, 5, 6}
	b, _ = proto.Marshal(m)
	f.Add(b)
	for _, enc := range encodings[1:] {
		m, err := encodeForward(rounded(f, forward(transport.Train, 3, 1, 2, 3), enc), enc, wire.None)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pb.Forward
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		for _, want := range encodings {
			fw, err := decodeForward(&m, 1<<16, want, wire.None)
			if err != nil {
				continue
			}
			if got := wire.Encoding(m.GetEmbedding().GetEncoding()); got != want {
				t.Fatalf("an embedding in encoding %v accepted where %v was agreed", got, want)
			}
			if len(fw.IDs) != fw.Embedding.Rows || len(fw.Embedding.Data) != fw.Embedding.Rows*fw.Embedding.Cols || fw.Step < 0 {
				t.Fatalf("inconsistent message %v step %d: %d IDs, %d×%d", fw.Phase, fw.Step, len(fw.IDs), fw.Embedding.Rows, fw.Embedding.Cols)
			}
			if n := len(m.GetEmbedding().GetPacked()); want != wire.F32 && n != want.Size(fw.Embedding.Rows, fw.Embedding.Cols) {
				t.Fatalf("%v payload of %d bytes accepted for %d×%d", want, n, fw.Embedding.Rows, fw.Embedding.Cols)
			}
			for _, v := range fw.Embedding.Data {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatal("a non-finite number passed")
				}
			}
		}
	})
}

// FuzzDecodeBackward feeds arbitrary wire bytes to the client's checks of
// an answer (training and evaluation, expecting each encoding in turn),
// and to the checks of a score answer: an error or an answer of the right
// shape in the expected encoding.
func FuzzDecodeBackward(f *testing.F) {
	for _, enc := range encodings {
		g, err := encodeTensor(rounded(f, forward(transport.Train, 3, 1, 2, 3), enc).Embedding, enc, wire.None)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(&pb.Backward{Step: 3, Batch: 1, Grad: g})
		f.Add(b)
		if enc.Sparse() { // a gradient of one value: sparse
			one := forward(transport.Train, 3, 1, 2, 3).Embedding
			clear(one.Data)
			one.Data[4] = 0.5
			g, err := encodeTensor(one, enc, wire.None)
			if err != nil || !g.GetSparse() {
				f.Fatalf("%v: a gradient of one value not packed sparse (%v)", enc, err)
			}
			b, _ := proto.Marshal(&pb.Backward{Step: 3, Batch: 1, Grad: g})
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pb.Backward
		if proto.Unmarshal(b, &m) == nil {
			for _, ph := range []transport.Phase{transport.Train, transport.Eval} {
				for _, want := range encodings {
					fw := forward(ph, 3, 1, 2, 3)
					bw, err := decodeBackward(&m, fw, 1<<16, want, wire.None)
					if err == nil && ph == transport.Train && (bw.Grad.Rows != 2 || bw.Grad.Cols != 3) {
						t.Fatalf("gradient %d×%d accepted for a 2×3 embedding", bw.Grad.Rows, bw.Grad.Cols)
					}
					if err == nil && ph == transport.Train && wire.Encoding(m.GetGrad().GetEncoding()) != want {
						t.Fatalf("a gradient in encoding %v accepted where %v was agreed", m.GetGrad().GetEncoding(), want)
					}
				}
			}
		}
		var s pb.ScoreResponse
		if proto.Unmarshal(b, &s) == nil {
			fw := forward(transport.Train, 0, 0, 2, 3)
			res, err := checkScore(&s, &ScoreBatch{Batch: 0, IDs: fw.IDs, Embedding: fw.Embedding})
			if err == nil && res.Scores != nil && len(res.Scores) != 2 {
				t.Fatalf("%d scores accepted for 2 rows", len(res.Scores))
			}
		}
	})
}

// FuzzHelloRequest feeds arbitrary wire bytes to the Hello comparison.
func FuzzHelloRequest(f *testing.F) {
	c, _ := fingerprintToPB(fp)
	b, _ := proto.Marshal(&pb.HelloRequest{ProtocolVersion: 1, Party: "passive", Config: c})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pb.HelloRequest
		if proto.Unmarshal(b, &m) != nil {
			return
		}
		remote := Hello{Version: m.GetProtocolVersion(), Party: m.GetParty(), Config: fingerprintFromPB(m.GetConfig())}
		local := Hello{Party: "active", Config: fp}.WithDefaults()
		if local.Mismatch(remote) == "" && remote.Config.Diff(fp) != "" {
			t.Fatal("a differing fingerprint was accepted")
		}
	})
}

// FuzzDecodeCompressed feeds arbitrary bytes as the zstd-compressed
// fields of a tensor of a fuzzed shape, encoding and sparsity to
// decodeTensor in a session agreed on zstd: an error or a finite tensor of
// that shape, never a panic; an accepted frame decodes to no more than
// the dense packing of the shape.
func FuzzDecodeCompressed(f *testing.F) {
	for _, enc := range encodings {
		fw := rounded(f, forward(transport.Train, 3, 1, 2, 3), enc)
		t, err := encodeTensor(fw.Embedding, enc, wire.None)
		if err != nil {
			f.Fatal(err)
		}
		e, err := zstd.NewWriter(nil, zstd.WithSingleSegment(true))
		if err != nil {
			f.Fatal(err)
		}
		payload := t.GetPacked()
		if enc == wire.F32 {
			payload = t.GetLeF32()
		}
		f.Add(uint8(2), uint8(3), uint8(enc), false, e.EncodeAll(payload, nil), []byte(nil))
	}
	f.Add(uint8(2), uint8(3), uint8(wire.F16), true, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x02, 0x11, 0, 0, 0, 0x3c}, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x01, 0x09, 0, 0, 4})
	f.Fuzz(func(t *testing.T, rows, cols, encN uint8, sparse bool, a, b []byte) {
		enc := wire.Encoding(encN % uint8(len(encodings)))
		p := &pb.Tensor{Rows: uint32(rows % 16), Cols: uint32(cols % 16), Encoding: pb.Encoding(enc), Sparse: sparse,
			Compression: pb.Compression_COMPRESSION_ZSTD}
		switch {
		case sparse:
			p.Packed, p.Index = a, b
		case enc == wire.F32:
			p.LeF32 = a
		default:
			p.Packed = a
		}
		m, err := decodeTensor(p, 1<<16, "t", enc, wire.Zstd)
		if err != nil {
			return
		}
		if m.Rows != int(p.Rows) || m.Cols != int(p.Cols) || len(m.Data) != m.Rows*m.Cols {
			t.Fatalf("%d×%d tensor accepted for %d×%d", m.Rows, m.Cols, p.Rows, p.Cols)
		}
		for _, v := range m.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatal("a non-finite number passed")
			}
		}
	})
}
