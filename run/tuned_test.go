package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTunedAttackersInARun: with tuned_known a run writes each per-batch
// attack's tuned figures and choices and the tuned completion figure, and
// the default attacks' per-batch figures are the same as without it (the
// tuned attackers draw from streams of their own).
func TestTunedAttackersInARun(t *testing.T) {
	var leaks [2][]map[string]any
	var sums [2]map[string]any
	for i, known := range []int{0, 16} {
		cfg := smallConfig(t)
		cfg.SynthRows, cfg.Epochs, cfg.EvalEvery = 6000, 1, 10
		cfg.Attacks = []string{"norm", "similarity_grad", "spectral", "completion_supervised"}
		cfg.TunedKnown = known
		if known > 0 {
			cfg.TunedBudget = 3
		}
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		for _, b := range readLines(t, filepath.Join(cfg.Out, "batches.jsonl")) {
			leaks[i] = append(leaks[i], b["leak"].(map[string]any))
		}
		raw, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &sums[i]); err != nil {
			t.Fatal(err)
		}
	}
	for b := range leaks[0] {
		for k, v := range leaks[0][b] {
			if leaks[1][b][k] != v {
				t.Fatalf("batch %d: %s = %v with the tuned attackers, %v without", b, k, leaks[1][b][k], v)
			}
		}
	}
	tuned, _ := sums[1]["tuned"].(map[string]any)
	for _, k := range []string{"norm_tuned/cut", "similarity_grad_tuned/cut", "spectral_tuned/cut"} {
		if c, _ := tuned[k].(string); !strings.Contains(c, "sign=") {
			t.Errorf("summary tuned[%s] = %q", k, c)
		}
		if _, ok := sums[1]["leak"].(map[string]any)[k]; !ok {
			t.Errorf("no leak summary %s", k)
		}
	}
	if c, _ := tuned["completion_supervised_tuned"].(string); !strings.Contains(c, "sign=") {
		t.Errorf("summary tuned[completion_supervised_tuned] = %q", c)
	}
	if _, ok := sums[1]["eval_attacks_final"].(map[string]any)["completion_supervised_tuned/auc"]; !ok {
		t.Errorf("no tuned completion figure in %v", sums[1]["eval_attacks_final"])
	}
	if _, ok := sums[0]["tuned"]; ok {
		t.Error("a tuned record without tuned_known")
	}
}
