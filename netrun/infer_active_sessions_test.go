package netrun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/transport"
)

// TestServeSessionsBounded: Serve refuses an unbounded number of scoring
// sessions (0 used to mean "until interrupted": an unbounded PSI
// membership oracle), and a second session within SessionInterval of the
// first is refused with the time to wait.
func TestServeSessionsBounded(t *testing.T) {
	for _, n := range []int{0, -1, MaxServeSessions + 1} {
		_, err := Serve(context.Background(), Default(), ServeOptions{Sessions: n, Out: "x.csv"}, Options{})
		if err == nil || !strings.Contains(err.Error(), "key sessions") {
			t.Errorf("sessions %d: %v", n, err)
		}
	}
	r := &serveRun{so: ServeOptions{SessionInterval: time.Hour}, rows: map[uint64]rowRef{1: {}, 2: {}}}
	if err := r.hello(context.Background(), transport.Hello{Party: "passive"}); err != nil {
		t.Fatal(err)
	}
	err := r.hello(context.Background(), transport.Hello{Party: "passive"})
	if err == nil || !strings.Contains(err.Error(), "at most once per 1h0m0s (key session_interval); try again in") {
		t.Fatalf("second session at once: %v", err)
	}
	r.started = time.Now().Add(-2 * time.Hour)
	if err := r.hello(context.Background(), transport.Hello{Party: "passive"}); err != nil {
		t.Fatalf("a session after the interval: %v", err)
	}
}

// TestServeNeedsSomewhereForTheScores: Serve with neither an output file
// nor sharing refuses, in the library's terms (no flag name).
func TestServeNeedsSomewhereForTheScores(t *testing.T) {
	cfg := Default()
	cfg.Data, cfg.Out, cfg.Addr, cfg.InsecureLoopback = synthFile(t, 100), t.TempDir(), "127.0.0.1:0", true
	_, err := Serve(context.Background(), cfg, ServeOptions{Sessions: 1}, Options{})
	if err == nil || !strings.Contains(err.Error(), "ServeOptions.Out") || strings.Contains(err.Error(), "--") {
		t.Fatalf("no output and no sharing: %v", err)
	}
}
