package netrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/run"
)

// TestThreePartiesFreeRiderAsInProcess runs three parties over loopback
// with passive party noise free-riding (noise from step 3): only its own
// process sets keys free_ride and cheater, and the run the active party
// records equals the in-process run with the same cheater. A process
// naming another party the cheater is refused.
func TestThreePartiesFreeRiderAsInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three parties twice")
	}
	root := t.TempDir()
	base := threePartyBase(synthFile(t, 900), filepath.Join(root, "inproc"))
	base.FreeRide, base.FreeRideFrom, base.Cheater = "noise", 3, "noise"
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := threePartyConfigs(base, root, "")
	act.FreeRide, act.FreeRideFrom, act.Cheater = "", 0, ""
	for k := range pas {
		if pas[k].Name != base.Cheater {
			pas[k].FreeRide, pas[k].FreeRideFrom, pas[k].Cheater = "", 0, ""
		}
	}
	got := runThreeClean(t, act, pas)
	sameAsThreeInProcess(t, act.Out, base.Out, got, want)

	wrong := pas[0]
	wrong.FreeRide, wrong.Cheater = "noise", "noise"
	if wrong.Name == "noise" {
		wrong = pas[1]
		wrong.FreeRide, wrong.Cheater = "noise", "inf"
	}
	if err := wrong.prepare("passive", Options{}); err == nil || !strings.Contains(err.Error(), "must be this passive party's own name") {
		t.Errorf("passive %s naming cheater %s: %v", wrong.Name, wrong.Cheater, err)
	}
}
