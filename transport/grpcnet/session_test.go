package grpcnet

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
)

// TestSessionOwnsCalls: a second client holding the passive party's
// certificate (another process, a stale one) cannot, without the session
// that the live passive's Hello opened, checkpoint (roll back), send a
// Forward, or shut the run down, nor open a session of its own while the
// first is live. The live session is unaffected; once it has ended (by
// Shutdown, or its connection closed and Timeouts.SessionIdle passed) a
// new Hello is accepted. On the code before sessions, every one of these
// calls reached the active party.
func TestSessionOwnsCalls(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	var mu sync.Mutex
	var ckpts []int64
	var shuts []string
	s := startServer(t, ServerOptions{TLS: p.server(t), Timeouts: Timeouts{SessionIdle: 300 * time.Millisecond}, Handlers: Handlers{
		Checkpoint: func(_ context.Context, step int64, _ []int64) error {
			mu.Lock()
			ckpts = append(ckpts, step)
			mu.Unlock()
			return nil
		},
		Shutdown: func(_ context.Context, r string) error { mu.Lock(); shuts = append(shuts, r); mu.Unlock(); return nil },
	}})
	e := runEcho(s, nil)
	files := pki.FilesIn(p.dir, "passive")
	a := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, files)})
	m := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, files), MaxRetries: -1})
	ctx := context.Background()
	hello := Hello{Party: "passive", Config: fp}
	if _, err := a.Hello(ctx, hello); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exchange(ctx, forward(transport.Train, 0, 0, 2, 4)); err != nil {
		t.Fatal(err)
	}
	if err := a.Checkpoint(ctx, 1); err != nil {
		t.Fatal(err)
	}

	refused := func(t *testing.T, err error, want string) {
		t.Helper()
		if status.Code(errors.Unwrap(err)) != codes.FailedPrecondition || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want FailedPrecondition containing %q", err, want)
		}
		if !NeedsNewSession(err) {
			t.Fatalf("NeedsNewSession(%v) = false", err)
		}
	}
	for _, forged := range []string{"", "00112233445566778899aabbccddeeff"} {
		m.session.Store(forged)
		want := errBeforeHello
		t.Run("token "+forged, func(t *testing.T) {
			refused(t, m.Checkpoint(ctx, 0), want)
			refused(t, m.Shutdown(ctx, ""), want)
			_, err := m.Exchange(ctx, forward(transport.Train, 40, 40, 2, 4))
			refused(t, err, want)
		})
	}
	m.session.Store("")
	if _, err := m.Hello(ctx, hello); err == nil || !strings.Contains(err.Error(), "another session of this run is live") {
		t.Fatalf("second Hello while the first session is live: %v", err)
	}
	// The live session carries on as if nothing happened.
	if _, err := a.Exchange(ctx, forward(transport.Train, 1, 1, 2, 4)); err != nil {
		t.Fatalf("the live session after the intruder: %v", err)
	}
	// The same client may start over (its token proves it).
	if _, err := a.Hello(ctx, hello); err != nil {
		t.Fatalf("the live session's own new Hello: %v", err)
	}
	if _, err := a.Exchange(ctx, forward(transport.Train, 2, 2, 2, 4)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(ckpts, []int64{1}) || len(shuts) != 0 {
		t.Fatalf("handlers saw checkpoints %v and shutdowns %q; want only the session's checkpoint 1", ckpts, shuts)
	}
	mu.Unlock()

	// Once the session's connection has closed and SessionIdle passed,
	// another client may open a session.
	_ = a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := m.Hello(ctx, hello)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Hello after the first session ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := m.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	seen, _ := e.wait(t)
	if want := []key{{0, transport.Train, 0}, {1, transport.Train, 1}, {2, transport.Train, 2}}; !slices.Equal(seen, want) {
		t.Fatalf("active received %v, want %v", seen, want)
	}
}

// TestSessionEndsWithShutdown: after the session's Shutdown a new client
// is accepted at once (scoring sessions follow each other), and a token of
// a session that ended is no longer current after the new Hello.
func TestSessionEndsWithShutdown(t *testing.T) {
	p := newPKI(t)
	s := startServer(t, ServerOptions{TLS: p.server(t), Handlers: Handlers{Checkpoint: func(context.Context, int64, []int64) error { return nil }}})
	files := pki.FilesIn(p.dir, "passive")
	a := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, files)})
	b := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, files)})
	ctx := context.Background()
	hello := Hello{Party: "passive", Config: fp}
	if _, err := a.Hello(ctx, hello); err != nil {
		t.Fatal(err)
	}
	if err := a.Shutdown(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Hello(ctx, hello); err != nil {
		t.Fatalf("Hello after the first session's Shutdown: %v", err)
	}
	if err := a.Checkpoint(ctx, 0); status.Code(errors.Unwrap(err)) != codes.FailedPrecondition || !strings.Contains(err.Error(), "not the current one") {
		t.Fatalf("a call of the ended session: %v", err)
	}
	if err := b.Checkpoint(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// TestAbortKeepsReasonLocal: the active party's reason for aborting can
// state facts about the labels; the passive party gets an incident number
// instead (the text used to be sent as is).
func TestAbortKeepsReasonLocal(t *testing.T) {
	s := startServer(t, ServerOptions{InsecureLoopback: true})
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true, MaxRetries: -1})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	secret := "test split has a single class"
	go func() {
		if _, err := s.Recv(ctx); err == nil {
			s.Abort(errors.New(secret))
		}
	}()
	_, err := c.Exchange(ctx, forward(transport.Eval, 0, 0, 2, 2))
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "incident") {
		t.Fatalf("the passive saw %v; want an incident number and not the reason", err)
	}
	if _, err := s.Recv(ctx); err == nil || !strings.Contains(err.Error(), secret) {
		t.Fatalf("Recv after Abort: %v, want the reason locally", err)
	}
}

// TestShutdownWaitsThroughALinkCut: the link goes down after the session
// began (its connections closed, new ones refused) and comes back 300 ms
// later; an abort sent while it is down fails at once, and a clean
// Shutdown waits for the link and succeeds, as PSI and Checkpoint do. It used to fail at once with Unavailable, which
// failed a two-party run whose training had ended when a cut fell on its
// last exchange (netrun's TestOverlapLinkCutAndResume, on a loaded
// machine).
func TestShutdownWaitsThroughALinkCut(t *testing.T) {
	var (
		mu    sync.Mutex
		down  bool
		conns []net.Conn
	)
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return nil, errors.New("link down")
		}
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			conns = append(conns, c)
		}
		return c, err
	}
	p := newPKI(t)
	s := startServer(t, ServerOptions{TLS: p.server(t)})
	c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive")), dialer: dialer})
	ctx := context.Background()
	if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	down = true
	for _, conn := range conns {
		conn.Close()
	}
	mu.Unlock()
	go func() {
		time.Sleep(300 * time.Millisecond)
		mu.Lock()
		down = false
		mu.Unlock()
	}()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	// An abort is sent once: with the link down it fails at once.
	if err := c.Shutdown(sctx, "the run failed"); status.Code(errors.Unwrap(err)) != codes.Unavailable {
		t.Fatalf("an abort with the link down: %v, want Unavailable at once", err)
	}
	if err := c.Shutdown(sctx, ""); err != nil {
		t.Fatalf("Shutdown through a link down for 300 ms: %v", err)
	}
}
