package netrun

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
)

// TestNetworkedDefences runs the gradient defences of the peer frameworks
// (sparsification, gradient DP, gradient averaging) in process and over
// the network and checks that both write the same batches and summary,
// including gradient DP's ε (two epochs: every example released twice).
func TestNetworkedDefences(t *testing.T) {
	if testing.Short() {
		t.Skip("trains six small runs")
	}
	path := synthFile(t, 600)
	certs := newTestPKI(t)
	for _, c := range []struct {
		name string
		p    protect.Params
	}{
		{"sparsify", protect.Params{"sparsify_p": 0.5}},
		{"grad_dp", protect.Params{"grad_dp_sigma": 2, "grad_dp_clip": 0.05, "grad_dp_delta": math.Exp(-4.5)}},
		{"grad_avg", protect.Params{"grad_avg_group": 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			base := smallConfig(path, filepath.Join(root, "inproc"))
			base.Protect, base.Params = c.name, c.p
			base.Attacks = []string{"norm", "cosine"}
			want, err := run.Train(context.Background(), base, run.Options{})
			if err != nil {
				t.Fatal(err)
			}
			act, pas := partyConfigs(base, root, certs)
			got := pair(t, act, pas)
			sameBatches(t, act.Out, base.Out, 10)
			if got.TestAUCFinal != want.TestAUCFinal || !reflect.DeepEqual(got.Privacy, want.Privacy) {
				t.Fatalf("summaries differ:\n got %v %v\nwant %v %v", got.TestAUCFinal, got.Privacy, want.TestAUCFinal, want.Privacy)
			}
			if c.name == "grad_dp" {
				// k = 2 releases at σ = 2: ρ = 2k/σ² = 1, and with
				// log(1/δ) = 4.5 the best order is 1 + √4.5 ≈ 3.12, on
				// the grid as 3.1: ε = 3.1 + 4.5/2.1.
				if e := got.Privacy["grad_dp_eps"]; math.Abs(e-(3.1+4.5/2.1)) > 1e-9 || got.Privacy["grad_dp_releases"] != 2 {
					t.Errorf("privacy %v, want ε = %v after 2 releases", got.Privacy, 3.1+4.5/2.1)
				}
			} else if got.Privacy != nil {
				t.Errorf("%s reports privacy %v", c.name, got.Privacy)
			}
		})
	}
}
