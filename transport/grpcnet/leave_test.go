package grpcnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
)

// TestLeaveAsksForANewSession: after Leave (the active process stopping,
// to be restarted) a training message is answered Unavailable, which
// tells the passive to start a new session; after Abort (the run ended)
// it is answered FailedPrecondition, which ends the passive's run.
func TestLeaveAsksForANewSession(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name       string
		end        func(s *Server)
		code       codes.Code
		newSession bool
		says       string
	}{
		{"leave", func(s *Server) { s.Leave(errors.New("stopped by SIGTERM")) }, codes.Unavailable, true, "the active party is stopping (stopped by SIGTERM)"},
		{"abort", func(s *Server) { s.Abort(errors.New("bad input")) }, codes.FailedPrecondition, false, "the run has ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, ServerOptions{TLS: p.server(t)})
			c := dial(t, s.Addr(), ClientOptions{TLS: p.client(t, pki.FilesIn(p.dir, "passive")), MaxRetries: 1, BackoffBase: time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := c.Hello(ctx, Hello{Party: "passive", Config: fp}); err != nil {
				t.Fatal(err)
			}
			tc.end(s)
			_, err := c.Exchange(ctx, forward(transport.Train, 0, 0, 2, 4))
			if got := status.Code(errors.Unwrap(err)); got != tc.code || NeedsNewSession(err) != tc.newSession || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Exchange after %s: %v (code %v, new session %v); want %v, new session %v, saying %q",
					tc.name, err, got, NeedsNewSession(err), tc.code, tc.newSession, tc.says)
			}
		})
	}
}
