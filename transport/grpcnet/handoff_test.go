package grpcnet

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
)

// countingConn counts the bytes written to the connection: what gRPC's
// writer has handed to the kernel.
type countingConn struct {
	net.Conn
	written *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// TestPipelinedSendHandsOff: on one processor (GOMAXPROCS 1, where
// nothing else can run gRPC's writer while the sender computes), a
// pipelined Send returns only after the message's bytes were written to
// the connection, so that a party computing its next step at once does
// not hold them back. Without the hand-off (the options' noHandOff) no message
// has left when Send returns: the writer waits for the sender to block.
func TestPipelinedSendHandsOff(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var written atomic.Int64
	dialer := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, written: &written}, nil
	}
	const sends, rows, cols = 20, 32, 32
	payload := int64(rows * cols * 4)
	for _, tc := range []struct {
		name     string
		off      bool
		min, max int
	}{
		// The scheduler takes the sender back before the writer about
		// once in 61 schedules (its fairness check of the global queue).
		{"hand-off", false, sends - 4, sends},
		{"none", true, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPKI(t)
			s := startServer(t, ServerOptions{TLS: p.server(t), PipelineDepth: 1, noHandOff: tc.off})
			runEcho(s, nil)
			c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive")), PipelineDepth: 1,
				dialer: dialer, noHandOff: tc.off})
			ctx := context.Background()
			if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
				t.Fatal(err)
			}
			left := 0
			for step := range int64(sends) {
				before := written.Load()
				if err := c.Send(ctx, forward(transport.Train, step, int(step), rows, cols)); err != nil {
					t.Fatalf("send step %d: %v", step, err)
				}
				if written.Load()-before >= payload {
					left++
				}
				if _, err := c.Receive(ctx); err != nil {
					t.Fatalf("receive step %d: %v", step, err)
				}
			}
			t.Logf("%d of %d messages written when Send returned", left, sends)
			if left < tc.min || left > tc.max {
				t.Errorf("%d of %d messages written when Send returned, want %d to %d", left, sends, tc.min, tc.max)
			}
		})
	}
}
