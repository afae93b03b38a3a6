package grpcnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/pki"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

var fp = Fingerprint{CutDim: 4, BatchSize: 8, Seed: 7, Epochs: 2, ScheduleLength: 100, Digest: []byte{1, 2}}

// testPKI holds a CA with active, passive and mallory, and a second CA with
// its own passive.
type testPKI struct{ dir, other string }

func newPKI(t *testing.T) testPKI {
	t.Helper()
	p := testPKI{dir: t.TempDir(), other: t.TempDir()}
	for _, d := range []string{p.dir, p.other} {
		if err := pki.InitCA(d, pki.CAOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"active", "passive", "mallory"} {
			if _, _, err := pki.Issue(d, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return p
}

func (p testPKI) server(t *testing.T) *tls.Config {
	c, err := pki.ServerTLSConfig(pki.FilesIn(p.dir, "active"), "passive")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (p testPKI) client(t *testing.T, files pki.Files) *tls.Config {
	c, err := pki.ClientTLSConfig(files, "active")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func quietLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func startServer(t *testing.T, o ServerOptions) *Server {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger(t)
	}
	if o.Local.Party == "" {
		o.Local = Hello{Party: "active", Config: fp}
	}
	s, err := Listen("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dial(t *testing.T, addr string, o ClientOptions) *Client {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger(t)
	}
	c, err := Dial(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// echo is an active party that answers every Train message with
// grad = 2·embedding + step and every Eval message with an empty answer.
type echo struct {
	mu    sync.Mutex
	seen  []key
	delay map[key]time.Duration
	err   error
	done  chan struct{}
}

func runEcho(s *Server, delay map[key]time.Duration) *echo {
	e := &echo{delay: delay, done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for {
			f, err := s.Recv(context.Background())
			if err != nil {
				e.mu.Lock()
				e.err = err
				e.mu.Unlock()
				return
			}
			k := key{step: f.Step, phase: f.Phase, batch: f.Batch}
			e.mu.Lock()
			e.seen = append(e.seen, k)
			e.mu.Unlock()
			time.Sleep(e.delay[k])
			b := &transport.Backward{Step: f.Step, Batch: f.Batch}
			if f.Phase == transport.Train {
				b.Grad = tensor.New(f.Embedding.Rows, f.Embedding.Cols)
				for i, v := range f.Embedding.Data {
					b.Grad.Data[i] = 2*v + float32(f.Step)
				}
			}
			if err := s.Reply(context.Background(), b); err != nil {
				e.mu.Lock()
				e.err = err
				e.mu.Unlock()
				return
			}
		}
	}()
	return e
}

func (e *echo) wait(t *testing.T) ([]key, error) {
	t.Helper()
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		t.Fatal("active party did not stop")
	}
	return e.seen, e.err
}

func forward(phase transport.Phase, step int64, batch int, rows, cols int) *transport.Forward {
	f := &transport.Forward{Phase: phase, Step: step, Batch: batch, Embedding: tensor.New(rows, cols)}
	for i := range rows {
		f.IDs = append(f.IDs, uint64(1000*step)+uint64(i))
	}
	for i := range f.Embedding.Data {
		f.Embedding.Data[i] = float32(i)*0.25 - float32(batch)
	}
	return f
}

// checkAnswer compares an answer with the echo's rule, computed here
// independently from the forward message.
func checkAnswer(t *testing.T, f *transport.Forward, b *transport.Backward) {
	t.Helper()
	if b.Step != f.Step || b.Batch != f.Batch {
		t.Fatalf("answer for step %d batch %d, sent %d/%d", b.Step, b.Batch, f.Step, f.Batch)
	}
	if f.Phase == transport.Eval {
		if b.Grad != nil {
			t.Fatal("eval answer carries a gradient")
		}
		return
	}
	if b.Grad.Rows != f.Embedding.Rows || b.Grad.Cols != f.Embedding.Cols {
		t.Fatalf("gradient %d×%d", b.Grad.Rows, b.Grad.Cols)
	}
	for i := range b.Grad.Data {
		want := float32(i)*0.5 - 2*float32(f.Batch) + float32(f.Step)
		if b.Grad.Data[i] != want {
			t.Fatalf("step %d: grad[%d] = %v, want %v", f.Step, i, b.Grad.Data[i], want)
		}
	}
}

func TestExchangeMutualTLS(t *testing.T) {
	p := newPKI(t)
	var ckpt []int64
	s := startServer(t, ServerOptions{TLS: p.server(t), Handlers: Handlers{
		Checkpoint: func(_ context.Context, step int64, _ []int64) error { ckpt = append(ckpt, step); return nil },
	}})
	e := runEcho(s, nil)
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	ctx := context.Background()
	remote, err := c.Hello(ctx, Hello{Party: "passive", Config: fp})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Party != "active" || remote.Version != ProtocolVersion || remote.Config.Diff(fp) != "" {
		t.Fatalf("remote hello %+v", remote)
	}
	msgs := []*transport.Forward{
		forward(transport.Train, 0, 0, 8, 4),
		forward(transport.Train, 1, 1, 8, 4),
		forward(transport.Eval, 2, 0, 5, 4),
		forward(transport.Eval, 2, 1, 3, 4),
		forward(transport.Train, 2, 2, 8, 4),
		forward(transport.Train, 3, 0, 8, 4),
	}
	msgs[3].Last = true
	var want []key
	for _, f := range msgs {
		b, err := c.Exchange(ctx, f)
		if err != nil {
			t.Fatalf("%v step %d: %v", f.Phase, f.Step, err)
		}
		checkAnswer(t, f, b)
		want = append(want, key{f.Step, f.Phase, f.Batch})
	}
	if err := c.Checkpoint(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	seen, err := e.wait(t)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("active Recv ended with %v, want io.EOF", err)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("active saw %v, want %v", seen, want)
	}
	if !slices.Equal(ckpt, []int64{4}) {
		t.Fatalf("checkpoints %v", ckpt)
	}
	cs, ss := c.Stats(), s.Stats()
	if cs.Exchanges != int64(len(msgs)) || ss.Exchanges != int64(len(msgs)) {
		t.Errorf("exchanges: client %d server %d, want %d", cs.Exchanges, ss.Exchanges, len(msgs))
	}
	// Each side counts the other's messages identically.
	if cs.BytesSent != ss.BytesReceived || cs.BytesReceived != ss.BytesSent || cs.MessagesSent != ss.MessagesReceived {
		t.Errorf("client %+v and server %+v disagree", cs, ss)
	}
	// At least the float data: 4 bytes per embedding value sent, and per
	// gradient value received (train only).
	var fwdBytes, bwdBytes int64
	for _, f := range msgs {
		fwdBytes += int64(4 * len(f.Embedding.Data))
		if f.Phase == transport.Train {
			bwdBytes += int64(4 * len(f.Embedding.Data))
		}
	}
	if cs.BytesSent < fwdBytes || cs.BytesReceived < bwdBytes || cs.BytesSent > 2*fwdBytes+1000 {
		t.Errorf("client sent %d bytes (payload %d), received %d (payload %d)", cs.BytesSent, fwdBytes, cs.BytesReceived, bwdBytes)
	}
}

func TestRefusedClients(t *testing.T) {
	p := newPKI(t)
	var logs syncBuffer
	s := startServer(t, ServerOptions{TLS: p.server(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e := runEcho(s, nil)
	tests := []struct {
		name  string
		files pki.Files
	}{
		{"certificate from another CA", pki.Files{Cert: pki.CertFile(p.other, "passive"), Key: pki.KeyFile(p.other, "passive"), CA: p.dir + "/ca.crt"}},
		{"not the pinned peer name", pki.FilesIn(p.dir, "mallory")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, tc.files), CallTimeout: time.Second, ExchangeTimeout: time.Second, MaxRetries: -1})
			_, err := c.Hello(context.Background(), Hello{Party: "passive", Config: fp})
			if err == nil {
				t.Fatal("Hello succeeded")
			}
			t.Logf("refused as expected: %v", err)
			if _, err := c.Exchange(context.Background(), forward(transport.Train, 0, 0, 2, 4)); err == nil {
				t.Fatal("Exchange succeeded")
			}
			if !strings.Contains(logs.String(), "refused a TLS client") {
				t.Errorf("the server did not log the refusal; log:\n%s", logs.String())
			}
		})
	}
	_ = s.Close()
	if seen, _ := e.wait(t); len(seen) != 0 {
		t.Fatalf("the active received %v from refused clients", seen)
	}
}

func TestInsecureLoopback(t *testing.T) {
	tests := []struct {
		addr   string
		listen bool
		ok     bool
	}{
		{"127.0.0.1:0", true, true},
		{"[::1]:0", true, true},
		{"localhost:0", true, true},
		{"0.0.0.0:0", true, false},
		{":0", true, false},
		{"192.0.2.1:7000", false, false},
		{"example.com:7000", false, false},
		{"127.0.0.1:7000", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			var err error
			if tc.listen {
				var s *Server
				s, err = Listen(tc.addr, ServerOptions{InsecureLoopback: true, Logger: quietLogger(t)})
				if err == nil {
					_ = s.Close()
				}
			} else {
				var c *Client
				c, err = Dial(tc.addr, ClientOptions{InsecureLoopback: true})
				if err == nil {
					_ = c.Close()
				}
			}
			if tc.ok && err != nil && !strings.Contains(err.Error(), "address family") {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "loopback")) {
				t.Fatalf("error %v, want a loopback refusal", err)
			}
		})
	}
	if _, err := Listen("127.0.0.1:0", ServerOptions{}); err == nil || !strings.Contains(err.Error(), "no TLS config") {
		t.Errorf("Listen without TLS: %v", err)
	}
	if _, err := Dial("127.0.0.1:1", ClientOptions{}); err == nil || !strings.Contains(err.Error(), "no TLS config") {
		t.Errorf("Dial without TLS: %v", err)
	}

	// A plaintext run on loopback works end to end.
	s := startServer(t, ServerOptions{InsecureLoopback: true})
	runEcho(s, nil)
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true})
	if _, err := c.Hello(context.Background(), Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	f := forward(transport.Train, 0, 0, 3, 4)
	b, err := c.Exchange(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, f, b)
}

// rawStream opens a Train stream with the generated client, so that the
// test can send messages the Client would never produce.
// rawStream opens a Train stream on a connection of its own, in the
// session of c (none when c is nil).
func rawStream(t *testing.T, addr string, cfg *tls.Config, c *Client) pb.SplitLearning_TrainClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if c != nil {
		ctx = c.withSession(ctx)
	}
	st, err := pb.NewSplitLearningClient(conn).Train(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestMalformedForwardRejected(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, ServerOptions{TLS: p.server(t), MaxMessageBytes: 1 << 20})
	e := runEcho(s, nil)
	cfg := p.client(t, pki.FilesIn(p.dir, "passive"))
	c := dial(t, s.Addr(), ClientOptions{TLS: cfg})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	good := func() *pb.Forward {
		m, err := encodeForward(forward(transport.Train, 0, 0, 2, 3), wire.F32, wire.None)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	nan := good()
	nan.Embedding.LeF32[4*4+3] = 0x7f // value 4 (bytes 16..19) becomes 0x7fc00000, a NaN
	nan.Embedding.LeF32[4*4+2] = 0xc0
	tests := []struct {
		name string
		m    *pb.Forward
		code codes.Code
		want string
	}{
		{"rows×cols ≠ data length", func() *pb.Forward { m := good(); m.Embedding.Rows = 3; m.Ids = append(m.Ids, 9); return m }(), codes.InvalidArgument, "shape 3×3 needs 36 bytes of float32 data, got 24"},
		{"NaN", nan, codes.InvalidArgument, "non-finite"},
		{"values form: short", func() *pb.Forward {
			m := good()
			m.Embedding.LeF32 = nil
			m.Embedding.Values = []float32{1, 2}
			return m
		}(), codes.InvalidArgument, "needs 6 values, got 2"},
		{"values form: Inf", func() *pb.Forward {
			m := good()
			m.Embedding.LeF32 = nil
			m.Embedding.Values = []float32{1, 2, 3, 4, float32(math.Inf(-1)), 6}
			return m
		}(), codes.InvalidArgument, "non-finite"},
		{"IDs ≠ rows", func() *pb.Forward { m := good(); m.Ids = m.Ids[:1]; return m }(), codes.InvalidArgument, "1 example IDs for 2 embedding rows"},
		{"no phase", func() *pb.Forward { m := good(); m.Phase = pb.Phase_PHASE_UNSPECIFIED; return m }(), codes.InvalidArgument, "invalid phase"},
		{"negative step", func() *pb.Forward { m := good(); m.Step = -1; return m }(), codes.InvalidArgument, "non-negative"},
		{"no embedding", func() *pb.Forward { m := good(); m.Embedding = nil; return m }(), codes.InvalidArgument, "embedding: missing"},
		{"over the size limit", func() *pb.Forward { m := good(); m.Embedding.Rows, m.Embedding.Cols = 1<<16, 1<<16; return m }(), codes.InvalidArgument, "exceeds the limit"},
		{"over the gRPC message limit", func() *pb.Forward { m := good(); m.Embedding.LeF32 = make([]byte, 2<<20); return m }(), codes.ResourceExhausted, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := rawStream(t, s.Addr(), cfg, c)
			if err := st.Send(tc.m); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			_, err := st.Recv()
			if status.Code(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v containing %q", err, tc.code, tc.want)
			}
		})
	}
	// The server keeps serving.
	f := forward(transport.Train, 0, 0, 2, 3)
	b, err := c.Exchange(ctx, f)
	if err != nil {
		t.Fatalf("exchange after the refusals: %v", err)
	}
	checkAnswer(t, f, b)
	if got := s.Stats().Rejected; got != int64(len(tests)-1) {
		t.Errorf("server counted %d rejected messages, want %d (the gRPC limit is enforced before the handler)", got, len(tests)-1)
	}
	_ = c.Close()
	if seen, _ := e.wait(t); len(seen) != 1 {
		t.Fatalf("active received %v, want only the valid message", seen)
	}
}

func TestReplayAndRetry(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, ServerOptions{TLS: p.server(t)})
	// Step 2's answer comes later than the client's exchange timeout.
	e := runEcho(s, map[key]time.Duration{{2, transport.Train, 2}: 700 * time.Millisecond})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive")),
		ExchangeTimeout: 250 * time.Millisecond, BackoffBase: 10 * time.Millisecond})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	for step := range int64(3) {
		f := forward(transport.Train, step, int(step), 4, 4)
		b, err := c.Exchange(ctx, f)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		checkAnswer(t, f, b)
	}
	if r := c.Stats().Retries; r < 1 {
		t.Errorf("client retried %d times, want ≥ 1 (step 2 timed out)", r)
	}
	if r := s.Stats().Retries; r < 1 {
		t.Errorf("server answered %d retries, want ≥ 1", r)
	}
	tests := []struct {
		name string
		f    *transport.Forward
		code codes.Code
		want string
	}{
		{"replayed old step", forward(transport.Train, 1, 1, 4, 4), codes.FailedPrecondition, "replayed old message train step 1 batch 1"},
		{"eval before the last train step", forward(transport.Eval, 2, 0, 4, 4), codes.FailedPrecondition, "replayed"},
		{"same step, other content", forward(transport.Train, 2, 2, 4, 3), codes.InvalidArgument, "re-sent with different content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Exchange(ctx, tc.f)
			if status.Code(errors.Unwrap(err)) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v containing %q", err, tc.code, tc.want)
			}
		})
	}
	// A re-sent identical last step is answered again, idempotently.
	f := forward(transport.Train, 2, 2, 4, 4)
	b, err := c.Exchange(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, f, b)
	f = forward(transport.Train, 3, 3, 4, 4)
	if b, err = c.Exchange(ctx, f); err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, f, b)
	_ = c.Close()
	seen, _ := e.wait(t)
	want := []key{{0, transport.Train, 0}, {1, transport.Train, 1}, {2, transport.Train, 2}, {3, transport.Train, 3}}
	if !slices.Equal(seen, want) {
		t.Fatalf("active applied %v, want each step once: %v", seen, want)
	}
}

func TestHelloAndControl(t *testing.T) {
	p := newPKI(t)
	var mu sync.Mutex
	var shut []string
	resp, err := psi.NewResponder(psi.Uint64Keys([]uint64{1, 2, 3, 5, 8, 13}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ServerOptions{TLS: p.server(t), Handlers: Handlers{
		Hello: func(_ context.Context, peer Hello) error {
			if peer.Party != "passive" {
				return errors.New("unknown party " + peer.Party)
			}
			return nil
		},
		PSI: func(_ context.Context, r *psi.Request) (*psi.Response, error) { return resp.Handle(r) },
		Shutdown: func(_ context.Context, reason string) error {
			mu.Lock()
			shut = append(shut, reason)
			mu.Unlock()
			return nil
		},
	}})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive"))})
	ctx := context.Background()

	// Before Hello, Train and PSI are refused.
	if _, err := c.Exchange(ctx, forward(transport.Train, 0, 0, 2, 4)); status.Code(errors.Unwrap(err)) != codes.FailedPrecondition {
		t.Fatalf("Train before Hello: %v", err)
	}
	if _, err := c.PSI(ctx, &psi.Request{Round: 1}); err == nil || !strings.Contains(err.Error(), "without the session of a successful Hello") {
		t.Fatalf("PSI before Hello: %v", err)
	}
	other := fp
	other.Seed, other.CutDim = 8, 5
	tests := []struct {
		name  string
		hello Hello
		want  string
	}{
		{"fingerprint", Hello{Party: "passive", Config: other}, "cut dim 4 ≠ 5, seed 7 ≠ 8"},
		{"version", Hello{Version: 99, Party: "passive", Config: fp}, fmt.Sprintf("protocol version %d ≠ 99", ProtocolVersion)},
		{"handler", Hello{Party: "eve", Config: fp}, "unknown party eve"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			remote, err := c.Hello(ctx, tc.hello)
			if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Hello: %v, want a refusal containing %q", err, tc.want)
			}
			if remote == nil || remote.Config.Diff(fp) != "" {
				t.Fatalf("the refusal does not carry the active's view: %+v", remote)
			}
		})
	}
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	got, err := psi.RunUint64([]uint64{13, 4, 2, 3, 99}, nil, func(r *psi.Request) (*psi.Response, error) { return c.PSI(ctx, r) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []uint64{2, 3, 13}) {
		t.Fatalf("PSI over gRPC: %v, want [2 3 13]", got)
	}
	if mine, err := resp.Intersection(); err != nil || len(mine) != 3 {
		t.Fatalf("responder intersection %v, %v", mine, err)
	}
	if err := c.Checkpoint(ctx, 3); status.Code(errors.Unwrap(err)) != codes.Unimplemented {
		t.Fatalf("Checkpoint without a handler: %v", err)
	}
	if err := c.Shutdown(ctx, "disk full"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(ctx); err == nil || !strings.Contains(err.Error(), "aborted the run: disk full") {
		t.Fatalf("Recv after an aborting Shutdown: %v", err)
	}
	if _, err := c.Exchange(ctx, forward(transport.Train, 0, 0, 2, 4)); err == nil || !strings.Contains(err.Error(), "the run has ended") {
		t.Fatalf("Exchange after Shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(shut, []string{"disk full"}) {
		t.Fatalf("shutdown handler saw %q", shut)
	}
}

func TestServerReplyChecks(t *testing.T) {
	s := startServer(t, ServerOptions{InsecureLoopback: true})
	ctx := context.Background()
	if err := s.Reply(ctx, &transport.Backward{}); err == nil || !strings.Contains(err.Error(), "without an unanswered message") {
		t.Fatalf("Reply with nothing pending: %v", err)
	}
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true})
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	f := forward(transport.Train, 5, 1, 2, 2)
	done := make(chan error, 1)
	go func() {
		_, err := c.Exchange(ctx, f)
		done <- err
	}()
	got, err := s.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != 5 || got.Batch != 1 || !slices.Equal(got.IDs, f.IDs) || !slices.Equal(got.Embedding.Data, f.Embedding.Data) {
		t.Fatalf("received %+v", got)
	}
	bad := []struct {
		b    *transport.Backward
		want string
	}{
		{&transport.Backward{Step: 4, Batch: 1, Grad: tensor.New(2, 2)}, "Reply for step 4 batch 1"},
		{&transport.Backward{Step: 5, Batch: 1, Grad: tensor.New(2, 3)}, "gradient shape 2×3, the embedding was 2×2"},
		{&transport.Backward{Step: 5, Batch: 1}, "gradient shape none"},
		{&transport.Backward{Step: 5, Batch: 1, Grad: tensor.FromSlice(2, 2, []float32{0, float32(math.NaN()), 0, 0})}, "non-finite"},
	}
	for _, tc := range bad {
		if err := s.Reply(ctx, tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Reply(%+v): %v, want %q", tc.b, err, tc.want)
		}
	}
	if err := s.Reply(ctx, &transport.Backward{Step: 5, Batch: 1, Grad: tensor.New(2, 2)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
