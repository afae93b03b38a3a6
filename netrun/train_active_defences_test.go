package netrun

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
)

// TestNetworkedDefences runs the defences of the peer frameworks
// (sparsification, gradient DP, gradient averaging, MID, DCAE, mixup) in process and over
// the network and checks that both write the same batches and summary,
// including gradient DP's ε (two epochs: every example released twice).
func TestNetworkedDefences(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twelve small runs")
	}
	path := synthFile(t, 600)
	certs := newTestPKI(t)
	for _, c := range []struct {
		test, name string
		p          protect.Params
	}{
		{"sparsify", "sparsify", protect.Params{"sparsify_p": 0.5}},
		{"grad_dp", "grad_dp", protect.Params{"grad_dp_sigma": 2, "grad_dp_clip": 0.05, "grad_dp_delta": math.Exp(-4.5)}},
		{"grad_avg", "grad_avg", protect.Params{"grad_avg_group": 4}},
		{"mid", "none", protect.Params{"mid_lambda": 0.01}},               // an input layer of the top model
		{"dcae", "dsgd", protect.Params{"dsgd_bins": 8, "cae_lambda": 2}}, // soft fake labels, decoded at evaluation
		{"mixup", "none", protect.Params{"mixup_alpha": 1}},
	} {
		t.Run(c.test, func(t *testing.T) {
			root := t.TempDir()
			base := smallConfig(path, filepath.Join(root, "inproc"))
			base.Protect, base.Params = c.name, c.p
			if c.test == "mid" {
				base.Model = "mlp" // a top that reads only the embedding, rebuilt below without data
			}
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
			} else if c.test == "mid" {
				// top.model holds the bottleneck: it loads into the top
				// that inference builds, and into nothing else.
				top, _, err := base.BuildTop(nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := top.(*config.InputTop); !ok {
					t.Fatalf("the top model is a %T, want a config.InputTop", top)
				}
				f, err := os.Open(filepath.Join(act.Out, "top.model"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := top.Load(f); err != nil {
					t.Errorf("top.model: %v", err)
				}
			} else if got.Privacy != nil {
				t.Errorf("%s reports privacy %v", c.name, got.Privacy)
			}
		})
	}
}
