package netrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClockOff: one party's wall clock is off (injected into its TLS
// checks; timeouts run on the monotonic clock and never read it). An hour
// either way, on either side, and the run is identical to the in-process
// run, the link cut once mid-run so that a second handshake happens (the
// certificates are backdated by pki.ClockSkew; before this test, by five
// minutes, so a clock an hour behind refused the peer). Three hours
// behind is a clean refusal naming the certificate's validity.
//
// Under -short (the race detector's run) only the passive an hour behind
// and the refusal run.
func TestClockOff(t *testing.T) {
	root := t.TempDir()
	base, ref := faultBase(t, root)
	for _, tc := range []struct {
		name    string
		side    string
		off     time.Duration
		refusal string // "" for an identical run
	}{
		{"passive an hour ahead", "passive", time.Hour, ""},
		{"passive an hour behind", "passive", -time.Hour, ""},
		{"active an hour behind", "active", -time.Hour, ""},
		{"passive three hours behind", "passive", -3 * time.Hour, "not yet valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name != "passive an hour behind" && tc.refusal == "" {
				t.Skip("two cases under -short")
			}
			clock := func() time.Time { return time.Now().Add(tc.off) }
			dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
			var r *faultRun
			if tc.side == "active" {
				r = startFaultWith(t, base, dir, Options{Clock: clock})
			} else {
				r = startFault(t, base, dir)
			}
			hookAt(r, 10, func() error {
				r.px.cut()
				time.AfterFunc(300*time.Millisecond, r.px.up)
				return nil
			})
			popt := r.passiveOptions()
			if tc.side == "passive" {
				popt.Clock = clock
			}
			_, err := RunPassive(context.Background(), r.pas, popt)
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("passive: %v, want a refusal containing %q", err, tc.refusal)
				}
				r.cancel()
				r.activeEnd()
				return
			}
			if err != nil {
				t.Fatalf("passive: %v\n%s", err, r.logText())
			}
			if res := r.activeEnd(); res.err != nil {
				t.Fatalf("active: %v", res.err)
			}
			r.sameAsReference(ref)
		})
	}
}
