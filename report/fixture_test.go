package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// writeFakeRun writes config.yaml, batches.jsonl (with null leak values
// for one-class batches), eval.jsonl and summary.json into dir.
func writeFakeRun(t testing.TB, dir string, f fakeRun) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "config.yaml"), f.config)
	rng := rand.New(rand.NewPCG(uint64(len(f.name)), 7))
	keys := []string{"norm/cut", "cosine/cut", "norm/first", "cosine/first", "norm/2", "spectral/cut", "spectral/first"}
	layerFactor := map[string]float64{"cut": 1, "2": 0.8, "first": 0.6}
	var b strings.Builder
	series := map[string][]float64{}
	for s := 1; s <= f.steps; s++ {
		leak := map[string]*float64{}
		for _, k := range keys {
			if s%37 == 0 { // a one-class batch
				leak[k] = nil
				continue
			}
			_, layer, _ := strings.Cut(k, "/")
			v := 0.5 + (f.leak-0.5)*layerFactor[layer]*(1-0.3*math.Exp(-float64(s)/50)) + 0.03*rng.NormFloat64()
			leak[k] = &v
			series[k] = append(series[k], v)
		}
		rec := map[string]any{"step": s, "epoch": 0, "loss": 0.6 - 0.1*float64(s)/float64(f.steps) + 0.02*rng.NormFloat64(),
			"positives": 256, "size": 1024, "leak": leak, "protect_ms": 0.1}
		if f.marvell {
			before := 3 + rng.Float64()
			after := 0.05 + 0.02*rng.Float64()
			rec["protection"] = map[string]any{"sumKL_before": before, "sumKL": after,
				"auc_bound": 0.5 + math.Sqrt(after)/2 - after/8, "error_lower_bound": 0.5 - math.Sqrt(after)/4, "solve_ms": 0.2}
		}
		j, _ := json.Marshal(rec)
		b.Write(j)
		b.WriteByte('\n')
	}
	writeFile(t, filepath.Join(dir, "batches.jsonl"), b.String())
	if !f.noEval {
		var e strings.Builder
		for s := 10; s <= f.steps; s += 10 {
			fmt.Fprintf(&e, `{"step":%d,"test_auc":%g,"test_loss":%g,"ace":0.01}`+"\n", s,
				f.auc-0.1*math.Exp(-float64(s)/40), 0.5+0.1*math.Exp(-float64(s)/40))
		}
		writeFile(t, filepath.Join(dir, "eval.jsonl"), e.String())
	}
	if f.noSum {
		return
	}
	leakSum := map[string]any{}
	for _, k := range keys {
		xs := series[k]
		var mean float64
		for _, v := range xs {
			mean += v
		}
		mean /= float64(len(xs))
		leakSum[k] = map[string]any{"q95": mean + 0.05, "q95_abs": mean - 0.45, "chance_q95_abs": 0.0417, "mean": mean, "batches": len(xs), "skipped": f.steps - len(xs)}
	}
	leakSum["hint1_inner/cut"] = map[string]any{"q95": nil, "q95_abs": nil, "chance_q95_abs": nil, "mean": nil, "batches": 0, "skipped": f.steps}
	sum := map[string]any{"test_auc_best": f.auc, "test_auc_final": f.auc - 0.002, "best_step": f.steps, "test_loss_final": 0.45 + (0.8 - f.auc),
		"test_loss_note": "BCE only", "ace_final": 0.01, "ace_best": 0.009, "ace_bins": 15, "train_loss_final": 0.5,
		"steps": f.steps, "epochs": 1, "examples": f.steps * 1024, "seconds": 12.5, "examples_per_s": 1000.0,
		"protect_ms_mean": 0.1, "step_ms_mean": 5.0, "leak": leakSum, "protect": "x"}
	j, _ := json.MarshalIndent(sum, "", "  ")
	writeFile(t, filepath.Join(dir, "summary.json"), string(j))
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
		{name: "max_norm-s1", config: base + "protect: max_norm\nseed: 1\n", leak: 0.7, auc: 0.776},
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
