package grpcnet_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/transporttest"
)

var partiesFP = grpcnet.Fingerprint{CutDim: 3, BatchSize: 4, Seed: 1, Epochs: 2, ScheduleLength: 5}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// partiesPKI issues the certificates of an active party, passives
// bank-a, bank-b and bank-c, a stranger and a twin carrying two
// passives' names.
func partiesPKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := pki.InitCA(dir, pki.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"active", "bank-a", "bank-b", "bank-c", "stranger"} {
		if _, _, err := pki.Issue(dir, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := pki.Issue(dir, "twin", pki.IssueOptions{Hosts: []string{"bank-a", "bank-b"}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listenParties serves the named passives over mutual TLS (dir from
// partiesPKI); handlers gives each passive's handlers; log receives the
// server's log (nil: none).
func listenParties(t *testing.T, dir string, names []string, handlers func(k int) grpcnet.Handlers, log *syncBuffer) *grpcnet.Parties {
	t.Helper()
	st, err := pki.ServerTLSConfigFor(pki.FilesIn(dir, "active"), names)
	if err != nil {
		t.Fatal(err)
	}
	o := grpcnet.PartiesOptions{TLS: st, Local: grpcnet.Hello{Party: "active", Config: partiesFP}, Logger: slog.New(slog.DiscardHandler)}
	if log != nil {
		o.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	for k, n := range names {
		o.Passives = append(o.Passives, grpcnet.PartyOptions{Name: n, Handlers: handlers(k)})
	}
	p, err := grpcnet.ListenParties("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// dialAs connects as the passive holding certificate name.
func dialAs(t *testing.T, dir, name, addr string) *grpcnet.Client {
	t.Helper()
	ct, err := pki.ClientTLSConfig(pki.FilesIn(dir, name), "active")
	if err != nil {
		t.Fatal(err)
	}
	c, err := grpcnet.Dial(addr, grpcnet.ClientOptions{TLS: ct, Logger: slog.New(slog.DiscardHandler), CallTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func noHandlers(int) grpcnet.Handlers { return grpcnet.Handlers{} }

// TestPartiesConformance checks each passive's Conn of a three-passive
// server against the transport contract, the other passives connected
// and in session.
func TestPartiesConformance(t *testing.T) {
	dir := partiesPKI(t)
	names := []string{"bank-a", "bank-b", "bank-c"}
	for k, name := range names {
		t.Run(name, func(t *testing.T) {
			transporttest.TestConn(t, func(t *testing.T) (transport.PassiveConn, transport.ActiveConn) {
				p := listenParties(t, dir, names, noHandlers, nil)
				var mine *grpcnet.Client
				for j, n := range names {
					c := dialAs(t, dir, n, p.Addr())
					if _, err := c.Hello(context.Background(), grpcnet.Hello{Party: n, Config: partiesFP}); err != nil {
						t.Fatal(err)
					}
					if j == k {
						mine = c
					}
				}
				return mine, p.Conn(k)
			}, closeWithoutStream("CloseUnused"), closeWithoutStream("CloseAfterRefusal"))
		})
	}
}

// TestPartiesPSI runs the hub PSI of an active party and three passives
// over mutual TLS on loopback and compares every party's result with the
// plain intersection.
func TestPartiesPSI(t *testing.T) {
	dir := partiesPKI(t)
	names := []string{"bank-a", "bank-b", "bank-c"}
	rng := rand.New(rand.NewPCG(5, 6))
	set := func() []uint64 {
		s := map[uint64]bool{}
		for len(s) < 400 {
			s[rng.Uint64N(1000)] = true
		}
		for v := range uint64(30) { // planted in every set
			s[5000+v] = true
		}
		out := make([]uint64, 0, len(s))
		for v := range s {
			out = append(out, v)
		}
		return out
	}
	y := set()
	xs := [][]uint64{set(), set(), set()}
	want := map[uint64]int{}
	for _, s := range append([][]uint64{y}, xs...) {
		for _, v := range s {
			want[v]++
		}
	}
	var common []uint64
	for v, n := range want {
		if n == 4 {
			common = append(common, v)
		}
	}
	slices.Sort(common)

	opt := psi.StreamOptions{Chunk: 64, Dir: t.TempDir()}
	hub, err := psi.NewHub(y, len(names), opt)
	if err != nil {
		t.Fatal(err)
	}
	p := listenParties(t, dir, names, func(k int) grpcnet.Handlers {
		return grpcnet.Handlers{PSI: func(ctx context.Context, req *psi.Request) (*psi.Response, error) { return hub.Handle(ctx, k, req) }}
	}, nil)
	got := make([][]uint64, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for k, n := range names {
		c := dialAs(t, dir, n, p.Addr())
		wg.Go(func() {
			ctx := context.Background()
			if _, errs[k] = c.Hello(ctx, grpcnet.Hello{Party: n, Config: partiesFP}); errs[k] != nil {
				return
			}
			got[k], errs[k] = psi.RunAlignUint64(xs[k], psi.StreamOptions{Chunk: 64, Dir: t.TempDir()},
				func(r *psi.Request) (*psi.Response, error) { return c.PSI(ctx, r) })
		})
	}
	wg.Wait()
	for k := range names {
		if errs[k] != nil {
			t.Fatalf("%s: %v", names[k], errs[k])
		}
		if !slices.Equal(got[k], common) {
			t.Errorf("%s: %d common IDs, want %d", names[k], len(got[k]), len(common))
		}
		// Each passive's messages are charged to its own Conn: at least
		// its x elements (32 bytes each) came in.
		if st := p.Conn(k).Stats(); st.BytesReceived < int64(32*len(xs[k])) || st.MessagesReceived == 0 {
			t.Errorf("%s: Conn stats %+v, want at least %d bytes received", names[k], st, 32*len(xs[k]))
		}
	}
	if h, err := hub.Intersection(); err != nil || !slices.Equal(h, common) {
		t.Errorf("hub: %d common (%v), want %d", len(h), err, len(common))
	}
}

// TestPartiesRouting: who is let in, and that each passive reaches only
// its own session and Conn.
func TestPartiesRouting(t *testing.T) {
	dir := partiesPKI(t)
	names := []string{"bank-a", "bank-b"}
	hello := func(c *grpcnet.Client, party string) error {
		_, err := c.Hello(context.Background(), grpcnet.Hello{Party: party, Config: partiesFP})
		return err
	}
	t.Run("certificates", func(t *testing.T) {
		var log syncBuffer
		p := listenParties(t, dir, names, noHandlers, &log)
		for i, tc := range []struct{ cert, want string }{
			{"stranger", "none of the expected peers"},
			{"twin", "two of the expected peers' names"},
			{"bank-c", "none of the expected peers"},
		} {
			err := hello(dialAs(t, dir, tc.cert, p.Addr()), tc.cert)
			if err == nil {
				t.Errorf("%s: let in", tc.cert)
			}
			// The server counts the refused handshake once its side of it
			// ends, which may be after the client's.
			for deadline := time.Now().Add(5 * time.Second); p.Stats().Rejected < int64(i+1) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if st := p.Stats(); st.Rejected < int64(i+1) {
				t.Errorf("%s: refusal not counted (%d refusals)", tc.cert, st.Rejected)
			}
			if !strings.Contains(log.String(), tc.want) {
				t.Errorf("%s: the server's log does not say %q:\n%s", tc.cert, tc.want, log.String())
			}
		}
		if err := hello(dialAs(t, dir, "bank-b", p.Addr()), "bank-b"); err != nil {
			t.Errorf("bank-b refused: %v", err)
		}
	})
	t.Run("sessions and streams are per passive", func(t *testing.T) {
		p := listenParties(t, dir, names, noHandlers, nil)
		a, b := dialAs(t, dir, "bank-a", p.Addr()), dialAs(t, dir, "bank-a", p.Addr())
		if err := hello(a, "bank-a"); err != nil {
			t.Fatal(err)
		}
		// A second process of bank-a is held off while a's session is
		// live; bank-b's own session is not affected by it.
		if err := hello(b, "bank-a"); err == nil || !strings.Contains(err.Error(), "another session") {
			t.Errorf("a second bank-a Hello: %v, want a refusal", err)
		}
		c := dialAs(t, dir, "bank-b", p.Addr())
		if err := hello(c, "bank-b"); err != nil {
			t.Fatalf("bank-b refused while bank-a is in session: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for k, cl := range []*grpcnet.Client{a, c} {
			go func() {
				f := &transport.Forward{Phase: transport.Train, Step: 0, Batch: 0, IDs: []uint64{uint64(k)}, Embedding: tensor.New(1, 3)}
				f.Embedding.Data[0] = float32(k + 1)
				_, _ = cl.Exchange(ctx, f)
			}()
		}
		for k := range names {
			f, err := p.Conn(k).Recv(ctx)
			if err != nil {
				t.Fatalf("%s: %v", names[k], err)
			}
			if f.IDs[0] != uint64(k) || f.Embedding.Data[0] != float32(k+1) {
				t.Errorf("%s's Conn received passive %d's message", names[k], f.IDs[0])
			}
			g := tensor.New(1, 3)
			if err := p.Conn(k).Reply(ctx, &transport.Backward{Step: 0, Batch: 0, Grad: g}); err != nil {
				t.Errorf("%s: reply: %v", names[k], err)
			}
		}
	})
	t.Run("options", func(t *testing.T) {
		for _, tc := range []struct {
			o    grpcnet.PartiesOptions
			want string
		}{
			{grpcnet.PartiesOptions{InsecureLoopback: true}, "no passive party"},
			{grpcnet.PartiesOptions{InsecureLoopback: true, Passives: []grpcnet.PartyOptions{{Name: "x"}, {Name: "x"}}}, `both named "x"`},
			{grpcnet.PartiesOptions{InsecureLoopback: true, Passives: []grpcnet.PartyOptions{{Name: "x"}, {}}}, "passive 1 has no name"},
			{grpcnet.PartiesOptions{Passives: []grpcnet.PartyOptions{{Name: "x"}}}, "no TLS config"},
		} {
			if _, err := grpcnet.ListenParties("127.0.0.1:0", tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
			}
		}
	})
}

// TestPartiesInsecureLoopback: without TLS a Hello is routed by its party
// name (an unknown one refused) and later calls by the session token.
func TestPartiesInsecureLoopback(t *testing.T) {
	o := grpcnet.PartiesOptions{InsecureLoopback: true, Local: grpcnet.Hello{Party: "active", Config: partiesFP}, Logger: slog.New(slog.DiscardHandler),
		Passives: []grpcnet.PartyOptions{{Name: "bank-a"}, {Name: "bank-b"}}}
	var mu sync.Mutex
	steps := map[string]int64{}
	for k := range o.Passives {
		n := o.Passives[k].Name
		o.Passives[k].Handlers.Checkpoint = func(_ context.Context, step int64, _ []int64) error {
			mu.Lock()
			steps[n] = step
			mu.Unlock()
			return nil
		}
	}
	p, err := grpcnet.ListenParties("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dial := func() *grpcnet.Client {
		c, err := grpcnet.Dial(p.Addr(), grpcnet.ClientOptions{InsecureLoopback: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	ctx := context.Background()
	if _, err := dial().Hello(ctx, grpcnet.Hello{Party: "bank-z", Config: partiesFP}); err == nil || !strings.Contains(err.Error(), `no passive party named "bank-z"`) {
		t.Errorf("unknown party: %v", err)
	}
	if err := dial().Checkpoint(ctx, 1); err == nil || !grpcnet.NeedsNewSession(err) {
		t.Errorf("a call without a session: %v", err)
	}
	for i, n := range []string{"bank-a", "bank-b"} {
		c := dial()
		if _, err := c.Hello(ctx, grpcnet.Hello{Party: n, Config: partiesFP}); err != nil {
			t.Fatal(err)
		}
		if err := c.Checkpoint(ctx, int64(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if steps["bank-a"] != 10 || steps["bank-b"] != 11 {
		t.Errorf("checkpoints reached %v, want bank-a 10, bank-b 11", steps)
	}
}

// TestPartiesCloseAndFingerprints: a passive's own Hello fingerprint is
// compared with that passive only; closing one passive's Conn ends that
// passive's run only, closing the Parties ends every one.
func TestPartiesCloseAndFingerprints(t *testing.T) {
	dir := partiesPKI(t)
	names := []string{"bank-a", "bank-b", "bank-c"}
	wide := partiesFP
	wide.CutDim = 7
	st, err := pki.ServerTLSConfigFor(pki.FilesIn(dir, "active"), names)
	if err != nil {
		t.Fatal(err)
	}
	p, err := grpcnet.ListenParties("127.0.0.1:0", grpcnet.PartiesOptions{TLS: st, Local: grpcnet.Hello{Party: "active", Config: partiesFP},
		Logger: slog.New(slog.DiscardHandler), Passives: []grpcnet.PartyOptions{
			{Name: "bank-a"}, {Name: "bank-b", Local: &grpcnet.Hello{Party: "active", Config: wide}}, {Name: "bank-c"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		fp   grpcnet.Fingerprint
		ok   bool
	}{
		{"bank-a", wide, false}, {"bank-a", partiesFP, true},
		{"bank-b", partiesFP, false}, {"bank-b", wide, true},
		{"bank-c", partiesFP, true},
	} {
		_, err := dialAs(t, dir, tc.name, p.Addr()).Hello(ctx, grpcnet.Hello{Party: tc.name, Config: tc.fp})
		if (err == nil) != tc.ok {
			t.Errorf("%s with cut %d: %v, want accepted %v", tc.name, tc.fp.CutDim, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "cut dim") {
			t.Errorf("%s: refusal %v does not name the cut width", tc.name, err)
		}
	}
	recv := func(k int) error {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		_, err := p.Conn(k).Recv(ctx)
		return err
	}
	if err := p.Conn(0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(0); !errors.Is(err, grpcnet.ErrServerClosed) {
		t.Errorf("bank-a after its Conn's Close: %v, want ErrServerClosed", err)
	}
	if err := recv(1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("bank-b after bank-a's Close: %v, want still waiting", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for k := 1; k < 3; k++ {
		if err := recv(k); !errors.Is(err, grpcnet.ErrServerClosed) {
			t.Errorf("%s after Close: %v, want ErrServerClosed", names[k], err)
		}
	}
}
