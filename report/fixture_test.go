package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/rundir/rundirtest"
)

// fakeRun describes a hand-made run directory.
type fakeRun struct {
	name    string
	config  string  // config.yaml text
	leak    float64 // typical leak AUC of norm/cut
	auc     float64 // best test AUC
	steps   int
	marvell bool
	noSum   bool // leave summary.json out
	noEval  bool // leave eval.jsonl out
	// onePositive: one positive per batch, and hint1_inner among the
	// attacks: its leak AUC is undefined at every batch.
	onePositive bool
}

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeFakeRun records the run f describes into dir with a
// rundir.Recorder (package rundirtest): config.yaml, batches.jsonl (with
// null leak AUCs for one-class batches), eval.jsonl and summary.json are
// what rundir writes, from synthetic steps.
func writeFakeRun(t testing.TB, dir string, f fakeRun) {
	t.Helper()
	if !strings.Contains(f.config, "attacks:") {
		f.config += "attacks: [norm, cosine, spectral]\n"
	}
	spec := rundirtest.Spec{Config: f.config, Steps: f.steps, Leak: f.leak, AUC: f.auc, NoEval: f.noEval, NoSummary: f.noSum}
	if f.onePositive {
		spec.Positives = 1
		spec.Config = strings.Replace(spec.Config, "attacks: [norm, cosine, spectral]", "attacks: [norm, cosine, spectral, hint1_inner]", 1)
	}
	if f.marvell {
		spec.Protection = func(rng *rand.Rand) protect.Stats {
			before := 3 + rng.Float64()
			after := 0.05 + 0.02*rng.Float64()
			return protect.Stats{"sumKL_before": before, "sumKL": after,
				"auc_bound": 0.5 + math.Sqrt(after)/2 - after/8, "error_lower_bound": 0.5 - math.Sqrt(after)/4, "solve_ms": 0.2}
		}
	}
	rundirtest.Write(t, dir, spec)
	if f.noEval { // a run directory that lost its evaluations
		if err := os.Remove(filepath.Join(dir, rundir.EvalFile)); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFakeSweep writes a small sweep: none, iso t∈{1,9}, max_norm, marvell
// s∈{0.1,1,4} (two seeds for s=1), dCor α=0.005, a failed run and
// results.csv.
func writeFakeSweep(t testing.TB, dir string, steps int) {
	t.Helper()
	base := "synth_rows: 20000\nepochs: 1\nbatch: 1024\n"
	runs := []fakeRun{
		{name: "none-s1", config: base + "protect: none\nseed: 1\n", leak: 0.95, auc: 0.78},
		{name: "iso-t1-s1", config: base + "protect: iso\niso_t: 1\nseed: 1\n", leak: 0.75, auc: 0.775},
		{name: "iso-t9-s1", config: base + "protect: iso\niso_t: 9\nseed: 1\n", leak: 0.63, auc: 0.768},
		{name: "max_norm-s1", config: base + "protect: max_norm\nseed: 1\n", leak: 0.7, auc: 0.776, onePositive: true},
		{name: "marvell-s0.1-s1", config: base + "protect: marvell\nmarvell_s: 0.1\nseed: 1\n", leak: 0.84, auc: 0.779, marvell: true},
		{name: "marvell-s1-s1", config: base + "protect: marvell\nmarvell_s: 1\nseed: 1\n", leak: 0.62, auc: 0.769, marvell: true},
		{name: "marvell-s1-s2", config: base + "protect: marvell\nmarvell_s: 1\nseed: 2\n", leak: 0.6, auc: 0.771, marvell: true},
		{name: "marvell-s4-s1", config: base + "protect: marvell\nmarvell_s: 4\nseed: 1\n", leak: 0.56, auc: 0.759, marvell: true},
		{name: "dcor-a0.005-s1", config: base + "protect: none\ndcor_alpha: 0.005\nseed: 1\n", leak: 0.9, auc: 0.777},
	}
	var csv strings.Builder
	csv.WriteString("run,status,error,protect,seed\n")
	for _, r := range runs {
		r.steps = steps
		writeFakeRun(t, filepath.Join(dir, r.name), r)
		fmt.Fprintf(&csv, "%s,done,,x,1\n", r.name)
	}
	writeFile(t, filepath.Join(dir, "iso-t100-s1", "config.yaml"), base+"protect: iso\niso_t: 100\nseed: 1\n")
	csv.WriteString("iso-t100-s1,failed,\"panic: boom\nexit status 2\",iso,1\n")
	writeFile(t, filepath.Join(dir, "results.csv"), csv.String())
}
