package netrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// goActive starts the active party of act and returns its address once
// it listens, and where its error arrives when it returns.
func goActive(t *testing.T, ctx context.Context, act Config) (string, <-chan error) {
	t.Helper()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := RunActive(ctx, act, Options{Logger: testLogger(t), Ready: func(a string) { addr <- a }})
		done <- err
	}()
	select {
	case a := <-addr:
		return a, done
	case err := <-done:
		t.Fatalf("active: %v", err)
	}
	return "", nil
}

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
	var done <-chan error
	pas.Addr, done = goActive(t, ctx, act)
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

// TestRealignmentFlood: once the passive party is gone (killed after step
// 5), a holder of its certificate opens session after session, each with
// a PSI over IDs of its choosing (each PSI that gets past its first
// request tells it which of its IDs the active holds). A PSI announcing
// another number of IDs than the passive aligned is refused at its first
// request; with the same number, realignBurst are answered and the next
// is refused as "try again later", a temporary refusal a reconnecting
// passive waits out.
func TestRealignmentFlood(t *testing.T) {
	root := t.TempDir()
	const rows = 200
	base := smallConfig(synthFile(t, rows), filepath.Join(root, "unused"))
	base.Attacks = []string{"norm"}
	r := startFault(t, base, root)
	killPassiveAfter(r, 5)
	if _, err := r.passive(context.Background()); !errors.Is(err, errKilled) {
		t.Fatalf("the killed passive: %v", err)
	}
	m := r.intruder(t)
	ctx := context.Background()
	hello := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := m.Hello(ctx, transport.Hello{Party: "passive", Config: helloPrint(r.pas)})
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("hello: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	probe := func(n int) error {
		ids := make([]uint64, n)
		for i := range ids {
			ids[i] = uint64(10_000 + i) // none of them the active's
		}
		_, err := alignIDs(ids, func(q *psi.Request) (*psi.Response, error) { return m.PSI(ctx, q) })
		return err
	}
	hello()
	if err := probe(rows + 1); err == nil || !strings.Contains(err.Error(), "the run's passive party aligned") {
		t.Fatalf("a PSI over another number of IDs: %v", err)
	}
	for i := range realignBurst + 1 {
		hello()
		err := probe(rows)
		if i < realignBurst {
			// Answered to the end, where the active refuses another
			// intersection than the run's.
			if err == nil || !strings.Contains(err.Error(), "intersection changed") {
				t.Fatalf("realignment %d: %v", i+1, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "try again in") || !grpcnet.NeedsNewSession(err) {
			t.Fatalf("realignment %d: %v, want a temporary refusal", i+1, err)
		}
	}
	r.cancel()
	r.activeEnd()
}

// TestIDFormatMismatchNamed: the active party's IDs are integers (1000),
// the passive's the same numbers written as decimals (1000.0), which hash
// as text: no ID is shared. The run ends with an error that names both
// formats (before this test: "0 IDs in the intersection" and no hint).
func TestIDFormatMismatchNamed(t *testing.T) {
	root := t.TempDir()
	write := func(name, suffix string) string {
		var b strings.Builder
		b.WriteString("id,label,x,c\n")
		for i := range 300 {
			fmt.Fprintf(&b, "%d%s,%d,%d,k%d\n", 1000+i, suffix, i%2, i%7, i%5)
		}
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := smallConfig(write("active.csv", ""), filepath.Join(root, "unused"))
	base.Format, base.Label, base.IDCol = "csv", "label", "id"
	base.HashBuckets = 0
	base.Protect, base.Params = "none", nil
	base.Attacks = []string{"norm"}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	pas.Data = write("passive.csv", ".0")
	act.Columns, pas.Columns = []string{"x"}, []string{"c"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var done <-chan error
	pas.Addr, done = goActive(t, ctx, act)
	want := "the active party's IDs are written as integer, the passive party's as decimal"
	if _, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)}); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("passive: %v, want an error containing %q", err, want)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("active: %v, want an error containing %q", err, want)
	}
}
