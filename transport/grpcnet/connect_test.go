package grpcnet

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestHelloClosedPort: a Hello to a port nothing listens on says so in
// the log at once and fails after ConnectTimeout with an error naming the
// address (before this test it retried silently until CallTimeout, ten
// minutes by default).
func TestHelloClosedPort(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // the port is now closed
	var logs syncBuffer
	c, err := Dial(addr, ClientOptions{InsecureLoopback: true, CallTimeout: time.Minute, ConnectTimeout: 400 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Hello(context.Background(), Hello{Party: "passive"})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "nothing answered at "+addr+" within 400ms") {
		t.Fatalf("hello to a closed port: %v", err)
	}
	if took > 20*time.Second {
		t.Fatalf("hello gave up after %v, want about the connect timeout", took)
	}
	if !strings.Contains(logs.String(), "the active party does not answer yet") || !strings.Contains(logs.String(), addr) {
		t.Fatalf("no log line naming the address:\n%s", logs.String())
	}
}

// TestHelloCarriesIDFormat: each side's Hello tells the other how its IDs
// are written, and a difference alone refuses nothing.
func TestHelloCarriesIDFormat(t *testing.T) {
	var seen string
	s := startServer(t, ServerOptions{InsecureLoopback: true, Local: Hello{Party: "active", Config: fp, IDFormat: "integer"},
		Handlers: Handlers{Hello: func(_ context.Context, peer Hello) error { seen = peer.IDFormat; return nil }}})
	c := dial(t, s.Addr(), ClientOptions{InsecureLoopback: true})
	remote, err := c.Hello(context.Background(), Hello{Party: "passive", Config: fp, IDFormat: "decimal"})
	if err != nil {
		t.Fatal(err)
	}
	if remote.IDFormat != "integer" || seen != "decimal" {
		t.Fatalf("the passive saw the active's IDs as %q, the active the passive's as %q; want integer and decimal", remote.IDFormat, seen)
	}
}
