package grpcnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/transport"
)

// TestCloseReturnsWithStuckHandler: a control hook that ignores its
// context made GracefulStop (which waits for every handler) and so Close
// wait forever. Close must return within its bounds and say why.
func TestCloseReturnsWithStuckHandler(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	entered := make(chan struct{})
	s, err := Listen("127.0.0.1:0", ServerOptions{InsecureLoopback: true, Logger: quietLogger(t),
		Local: Hello{Party: "active", Config: fp}, Timeouts: Timeouts{CloseGrace: 100 * time.Millisecond, CloseWait: 200 * time.Millisecond},
		Handlers: Handlers{Checkpoint: func(context.Context, int64, []int64) error {
			close(entered)
			<-release // ignores the context: stuck until the test ends
			return nil
		}}})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true, CallTimeout: 5 * time.Second})
	if _, err := c.Hello(context.Background(), Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Checkpoint(context.Background(), 3) }()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the checkpoint call never reached the handler")
	}
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- s.Close() }()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "did not return") {
			t.Errorf("Close: %v, want an error naming the stuck handler", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
}

// TestReplyNeedsRecv: a Reply to a message that Recv never handed out is
// refused (it used to be accepted, leaving the message queued so that the
// next one blocked the handler, holding the server's lock, for good).
func TestReplyNeedsRecv(t *testing.T) {
	s := startServer(t, ServerOptions{InsecureLoopback: true})
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	f := forward(transport.Train, 0, 0, 2, 2)
	go func() { _, _ = c.Exchange(ctx, f) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Reply(ctx, &transport.Backward{Step: 0, Batch: 0, Grad: f.Embedding})
		if err == nil {
			t.Fatal("Reply before Recv accepted")
		}
		s.mu.Lock()
		have := s.have
		s.mu.Unlock()
		if have || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Reply(ctx, &transport.Backward{Step: 0, Batch: 0, Grad: f.Embedding}); err == nil {
		t.Fatal("Reply before Recv accepted")
	}
	// Abort keeps its reason local (Recv returns it).
	s.Abort(errors.New("schedule mismatch at step 0"))
	if got, err := s.Recv(ctx); err != nil || got.Step != 0 {
		t.Fatalf("Recv of the queued message: %v, %v", got, err)
	}
	if _, err := s.Recv(ctx); err == nil || !strings.Contains(err.Error(), "schedule mismatch") {
		t.Fatalf("Recv after Abort: %v", err)
	}
}

// TestTimeoutsDefaults: a zero Timeouts field takes its documented
// default, a set one is kept, and a server built from options holds them.
func TestTimeoutsDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		in, want Timeouts
	}{
		{"zero", Timeouts{}, Timeouts{Handshake: 10 * time.Second, SessionIdle: 2 * time.Second, CloseGrace: 2 * time.Second, CloseWait: 5 * time.Second}},
		{"set", Timeouts{Handshake: time.Millisecond, SessionIdle: 2 * time.Millisecond, CloseGrace: 3 * time.Millisecond, CloseWait: 4 * time.Millisecond},
			Timeouts{Handshake: time.Millisecond, SessionIdle: 2 * time.Millisecond, CloseGrace: 3 * time.Millisecond, CloseWait: 4 * time.Millisecond}},
		{"one set", Timeouts{CloseWait: time.Minute}, Timeouts{Handshake: 10 * time.Second, SessionIdle: 2 * time.Second, CloseGrace: 2 * time.Second, CloseWait: time.Minute}},
	} {
		if got := tc.in.withDefaults(); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		s := newServer(ServerOptions{Timeouts: tc.in})
		if s.o.Timeouts != tc.want || s.sess.idle != tc.want.SessionIdle {
			t.Errorf("%s: server holds %+v (session idle %v), want %+v", tc.name, s.o.Timeouts, s.sess.idle, tc.want)
		}
	}
}
