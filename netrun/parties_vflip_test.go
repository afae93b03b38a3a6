package netrun

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/run"
)

// TestPartiesVflipOverNetwork runs the cross-party detector vflip with
// two passive parties over loopback: the active party's recorded scores
// (the detector's and each party's largest) equal the in-process run's.
func TestPartiesVflipOverNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties twice")
	}
	root := t.TempDir()
	base := threePartyBase(synthFile(t, 900), filepath.Join(root, "inproc"))
	base.Detectors = []string{"vflip"}
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := threePartyConfigs(base, root, "")
	got := runThreeClean(t, act, pas)
	if len(want.Integrity) != 3 || !reflect.DeepEqual(got.Integrity, want.Integrity) {
		t.Fatalf("integrity scores over the network %v, in process %v (want vflip, vflip/inf, vflip/noise)", got.Integrity, want.Integrity)
	}
	t.Logf("integrity maxima in both modes: %v", got.Integrity)
}
