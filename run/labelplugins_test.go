package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/protect"
)

// TestLabelPluginsInARun runs KDk, PELoss and ExPLoit end to end on a
// small synthetic table: KDk at ε = 0 trains exactly as no defence does
// (the same leak in every batch); KDk at ε = 0.3 and PELoss change what
// the passive party receives while the model still learns; ExPLoit scores
// every batch.
func TestLabelPluginsInARun(t *testing.T) {
	type result struct {
		leaks []map[string]any
		sum   map[string]any
	}
	train := func(p protect.Params) result {
		cfg := smallConfig(t)
		cfg.SynthRows, cfg.Epochs, cfg.EvalEvery = 6000, 1, 10
		cfg.Attacks = []string{"norm", "exploit"}
		cfg.Params = p
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		var r result
		for _, b := range readLines(t, filepath.Join(cfg.Out, "batches.jsonl")) {
			r.leaks = append(r.leaks, b["leak"].(map[string]any))
		}
		raw, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r.sum); err != nil {
			t.Fatal(err)
		}
		return r
	}
	none, zero := train(nil), train(protect.Params{"kdk_eps": 0})
	kdk, pe := train(protect.Params{"kdk_eps": 0.3}), train(protect.Params{"peloss_alpha": 0.003})
	var differ [2]int
	for b := range none.leaks {
		for k, v := range none.leaks[b] {
			if zero.leaks[b][k] != v {
				t.Fatalf("batch %d: %s = %v with KDk ε = 0, %v without", b, k, zero.leaks[b][k], v)
			}
			for i, r := range []result{kdk, pe} {
				if r.leaks[b][k] != v {
					differ[i]++
				}
			}
		}
	}
	if differ[0] == 0 || differ[1] == 0 {
		t.Errorf("batch leaks changed by KDk ε = 0.3: %d, by PELoss: %d; want some", differ[0], differ[1])
	}
	for name, r := range map[string]result{"none": none, "kdk": kdk, "peloss": pe} {
		leak := r.sum["leak"].(map[string]any)
		ex, ok := leak["exploit/cut"].(map[string]any)
		if !ok {
			t.Fatalf("%s: no exploit/cut in the summary's leak: %v", name, leak)
		}
		if auc, _ := r.sum["test_auc_final"].(float64); auc < 0.55 {
			t.Errorf("%s: test AUC %v, the model did not learn", name, auc)
		}
		t.Logf("%s: test AUC %.3f, exploit q95|AUC−½| %.3f, norm %.3f", name, r.sum["test_auc_final"], ex["q95_abs"], leak["norm/cut"].(map[string]any)["q95_abs"])
	}
}
