package netrun

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// TestNetworkedPassportAndPassiveDefences runs FedPass (in the active top,
// and in the passive bottom) and MID at the passive party's output over
// the network, kills the passive party right after its checkpoint of step
// 10 and restarts it: the run resumes there and ends identical to the
// uninterrupted in-process run. Each party's model file loads into the
// model the configuration builds (the passive's passports in its
// bottom.model, the active's in its top.model).
func TestNetworkedPassportAndPassiveDefences(t *testing.T) {
	if testing.Short() {
		t.Skip("eight small runs")
	}
	path := synthFile(t, faultRows)
	for _, c := range []struct {
		name string
		p    protect.Params
	}{
		{"fedpass", protect.Params{"fedpass_range": 5}},
		{"fedpass_passive", protect.Params{"fedpass_passive_range": 5, "fedpass_passive_sigma": 0.5}},
		{"mid_passive", protect.Params{"mid_passive_lambda": 0.01}},
		{"emb_noise", protect.Params{"emb_noise_sigma": 0.05, "emb_noise_clip": 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			base := smallConfig(path, filepath.Join(root, "inproc"))
			base.Model, base.Protect, base.Params = "mlp", "none", c.p
			base.Attacks = []string{"norm", "cosine"}
			if _, err := run.Train(context.Background(), base, run.Options{}); err != nil {
				t.Fatal(err)
			}
			r := startFaultWith(t, base, root, Options{inProcessSecret: true})
			killRestartAndEnd(t, r, 10)
			if !strings.Contains(r.logText(), "step=10") {
				t.Errorf("the passive did not resume at step 10:\n%s", r.logText())
			}
			r.sameAsReference(base.Out)
			// Each party's model file holds its own defence layer, and only
			// its own: the passive's passports never reach the active.
			top, _, err := base.BuildTop(nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(filepath.Join(r.act.Out, "top.model"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := top.Load(f); err != nil {
				t.Errorf("top.model: %v", err)
			}
			tag := map[string]string{"fedpass": "fedpass/v1", "fedpass_passive": "fedpass/v1", "mid_passive": "mid/v1", "emb_noise": "emb_noise/v1"}[c.name]
			bottom, err := os.ReadFile(filepath.Join(r.pas.Out, "bottom.model"))
			if err != nil {
				t.Fatal(err)
			}
			passive := c.name != "fedpass"
			if got := bytes.Contains(bottom, []byte(tag)); got != passive {
				t.Errorf("bottom.model holds %s: %v, want %v", tag, got, passive)
			}
			for _, dir := range []string{r.act.Out, r.act.checkpointDir()} {
				files, _ := os.ReadDir(dir)
				for _, fi := range files {
					b, err := os.ReadFile(filepath.Join(dir, fi.Name()))
					if err == nil && passive && bytes.Contains(b, []byte(tag)) {
						t.Errorf("the active party's %s holds the passive's %s state", fi.Name(), tag)
					}
				}
			}
		})
	}
}

// TestPassiveDefenceMismatchRefused: the passive-side defences are part
// of the settings both parties share; parties that disagree are refused
// at Hello with the passive's settings named.
func TestPassiveDefenceMismatchRefused(t *testing.T) {
	c := Default()
	c.Data, c.Out, c.Addr, c.InsecureLoopback = "d", "o", "127.0.0.1:0", true
	plain := c
	c.Params = protect.Params{"fedpass_passive_range": 2}
	if bytes.Equal(plain.SharedDigest(), c.SharedDigest()) {
		t.Error("the digest ignores the passive-side defences")
	}
	active := plain
	active.Params = protect.Params{"mid_lambda": 0.1, "fedpass_range": 3}
	if !bytes.Equal(plain.SharedDigest(), active.SharedDigest()) {
		t.Error("the digest covers an active-side defence")
	}
	if h := c.digestHint(); !strings.Contains(h, "fedpass_passive_range=2") {
		t.Errorf("hint %q does not name the passive-side defence", h)
	}
	if testing.Short() {
		return
	}
	root := t.TempDir()
	base := smallConfig(synthFile(t, 300), filepath.Join(root, "inproc"))
	base.Model, base.Protect, base.Params = "mlp", "none", nil
	act, pas := partyConfigs(base, root, newTestPKI(t))
	pas.Params = protect.Params{"fedpass_passive_range": 2}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := make(chan string, 1)
	go func() {
		_, _ = RunActive(ctx, act, Options{Logger: testLogger(t), Ready: func(a string) { addr <- a }})
	}()
	pas.Addr = <-addr
	_, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "digest") || !strings.Contains(err.Error(), "fedpass_passive_range=2") {
		t.Errorf("a passive with a passive-side defence the active lacks: %v", err)
	}
}

// TestPassportsOnTheCNN runs FedPass on both sides of the split CNN (a
// passport layer in front of the top and one at the passive output, which
// combine) in process and over the network: the same evaluations.
func TestPassportsOnTheCNN(t *testing.T) {
	if testing.Short() {
		t.Skip("two small CNN runs")
	}
	root := t.TempDir()
	base := config.Default()
	base.Model, base.Out = "cnn", filepath.Join(root, "inproc")
	base.Data, base.Format = t.TempDir(), "fashion-mnist"
	writeFashionIDX(t, base.Data, 150, 60, 8)
	base.PositiveClass, base.ImageSize = 3, 8
	base.CNNBlocks, base.CNNChannels, base.CNNDense, base.Cut = 2, 4, 8, 1
	base.Batch, base.Epochs, base.EvalEvery, base.LR, base.Seed = 16, 2, 3, 1e-3, 5
	base.Protect, base.Params = "none", protect.Params{"fedpass_range": 3, "fedpass_passive_range": 3}
	base.Attacks = []string{"norm", "cosine"}
	if _, err := run.Train(context.Background(), base, run.Options{}); err != nil {
		t.Fatal(err)
	}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	pairWith(t, act, pas, Options{inProcessSecret: true})
	ge := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl"))
	we := readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
	if !reflect.DeepEqual(ge, we) || len(we) < 3 {
		t.Fatalf("evaluations differ:\n got %v\nwant %v", ge, we)
	}
	sameBatches(t, act.Out, base.Out, 6)
}

// TestServeWithDefenceLayers trains with a passport layer in the active
// top and MID at the passive output, then scores the test split through
// serve/score: the models each party saved rebuild and load, the passive's
// bottleneck runs in its evaluation mode, and the scores' AUC equals the
// final evaluation recorded during training.
func TestServeWithDefenceLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("a two-party run and a scoring session")
	}
	root := t.TempDir()
	base := csvConfig(csvFile(t, 0, 1000), "")
	base.Params = protect.Params{"fedpass_range": 3, "mid_passive_lambda": 0.01}
	act, pas := partyConfigs(base, root, newTestPKI(t))
	sum := pair(t, act, pas)
	full, label := testLabels(t, base)
	out := filepath.Join(root, "scores.csv")
	if _, pr := serveScore(t, act, pas, ServeOptions{Out: out, Sessions: 1}, ScoreOptions{Out: filepath.Join(root, "p.csv")}); pr.Scored != len(full.Test.IDs) {
		t.Fatalf("scored %d of %d test rows", pr.Scored, len(full.Test.IDs))
	}
	ids, ps := readScores(t, out)
	ys := make([]uint8, len(ids))
	for i, id := range ids {
		ys[i] = label[id]
	}
	if auc := pairAUC(ps, ys); math.Abs(auc-sum.TestAUCFinal) > 1e-9 {
		t.Fatalf("scores give AUC %.9f, training's final evaluation %.9f", auc, sum.TestAUCFinal)
	}
}
