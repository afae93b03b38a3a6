package grpcnet

import (
	"context"
	"log/slog"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/inproc"
	"github.com/splitguard/splitguard/transport/wire"
)

// benchExchange runs b.N lock-step exchanges of a 1024×128 float32
// embedding (the paper's Criteo batch and cut width) and reports ms and
// bytes per step.
func benchExchange(b *testing.B, p transport.PassiveConn, a transport.ActiveConn, bytesPerStep func() int64) {
	const rows, cols = 1024, 128
	grad := tensor.New(rows, cols)
	go func() {
		for {
			f, err := a.Recv(context.Background())
			if err != nil {
				return
			}
			if err := a.Reply(context.Background(), &transport.Backward{Step: f.Step, Batch: f.Batch, Grad: grad}); err != nil {
				return
			}
		}
	}()
	f := &transport.Forward{Phase: transport.Train, Embedding: tensor.New(rows, cols), IDs: make([]uint64, rows)}
	for i := range f.IDs {
		f.IDs[i] = uint64(i) * 7919
	}
	ctx := context.Background()
	var step int64
	for b.Loop() {
		f.Step, f.Batch = step, int(step)
		if _, err := p.Exchange(ctx, f); err != nil {
			b.Fatal(err)
		}
		step++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(step), "ms/step")
	if bytesPerStep != nil {
		b.ReportMetric(float64(bytesPerStep())/float64(step), "B/step")
	}
	_ = p.Close()
}

func BenchmarkExchange1024x128Inproc(b *testing.B) {
	p, a := inproc.Pipe()
	benchExchange(b, p, a, nil)
}

func BenchmarkExchange1024x128MutualTLS(b *testing.B) {
	dir := b.TempDir()
	if err := pki.InitCA(dir, pki.CAOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"active", "passive"} {
		if _, _, err := pki.Issue(dir, n, pki.IssueOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	st, err := pki.ServerTLSConfig(pki.FilesIn(dir, "active"), "passive")
	if err != nil {
		b.Fatal(err)
	}
	ct, err := pki.ClientTLSConfig(pki.FilesIn(dir, "passive"), "active")
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	s, err := Listen("127.0.0.1:0", ServerOptions{TLS: st, Local: Hello{Party: "active"}, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := Dial(s.Addr(), ClientOptions{TLS: ct, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Hello(context.Background(), Hello{Party: "passive"}); err != nil {
		b.Fatal(err)
	}
	before := c.Stats()
	benchExchange(b, c, s, func() int64 {
		st := c.Stats()
		return st.BytesSent - before.BytesSent + st.BytesReceived - before.BytesReceived
	})
}

// BenchmarkTensorCodec1024x128 encodes and decodes a 1024×128 int4
// tensor of ReLU-like values (reluLike: repeating, compressible) without
// compression and with zstd, reporting the bytes of the encoded tensor.
func BenchmarkTensorCodec1024x128(b *testing.B) {
	m := reluLike(b, 1024, 128, wire.Int4, false)
	for _, comp := range []wire.Compression{wire.None, wire.Zstd} {
		b.Run("encode-"+comp.String(), func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for range b.N {
				t, err := encodeTensor(m, wire.Int4, comp)
				if err != nil {
					b.Fatal(err)
				}
				n = proto.Size(t)
			}
			b.ReportMetric(float64(n), "B/tensor")
		})
		t, err := encodeTensor(m, wire.Int4, comp)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("decode-"+comp.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := decodeTensor(t, 1<<20, "t", wire.Int4, comp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
