package netrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPassiveDataRefusalReachesActive: a passive party whose data cannot
// be loaded (here a column its file lacks) tells the running active party
// at once; the active ends within seconds with the passive's reason
// (before this test it waited for the peer timeout, minutes by default).
func TestPassiveDataRefusalReachesActive(t *testing.T) {
	root := t.TempDir()
	base := smallConfig(synthFile(t, 200), filepath.Join(root, "unused"))
	act, pas := partyConfigs(base, root, newTestPKI(t))
	act.PeerTimeout = 10 * time.Minute
	pas.Columns = []string{"I1", "C99"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := RunActive(ctx, act, Options{Logger: testLogger(t), Ready: func(a string) { addr <- a }})
		done <- err
	}()
	select {
	case pas.Addr = <-addr:
	case err := <-done:
		t.Fatalf("active: %v", err)
	}
	if _, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)}); err == nil || !strings.Contains(err.Error(), `"C99" not found`) {
		t.Fatalf("passive: %v", err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `requested column "C99" not found`) {
			t.Fatalf("active: %v, want the passive's reason", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the active party was not told")
	}
}
