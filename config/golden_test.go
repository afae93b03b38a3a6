package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/internal/golden"
	"github.com/splitguard/splitguard/tensor"
)

// customised is a configuration a user might write: a CSV table split
// between the parties, a smaller model, Marvell in target mode with label
// DP and dCor, the tuned attacker and feature attacks, compressed wire
// encodings, the integrity checks.
const customised = `format: csv
data: customers.csv
label: churn
positive: [yes]
id_col: customer_id
categorical: [plan]
ignore: [email]
passive_columns: [tenure, spend]
model: mlp
layers: [64, 64, 32]
cut: 2
epochs: 20
batch: 256
lr: 0.001
seed: 7
eval_every: 50
val_frac: 0.2
select: best
early_stop: 5
protect: marvell
marvell_error_bound: 0.3
marvell_s: 2
dcor_alpha: 0.003
label_dp_eps: 2
attacks: [norm, cosine, spectral]
tuned_known: 16
feature_attacks: [inverse_linear]
feature_aux: 500
wire_embedding: bf16
wire_gradient: int8
detectors: [replay, collapse]
integrity_stop: {replay: 0.5}
contribution: true
min_passive_gain: 0.05
out: runs/churn
`

// TestGoldenConfigYAML compares config.yaml as a run writes it (the
// header and Marshal) for the default configuration, for one with keys
// chosen from the data, and for a customised one read from YAML, with
// testdata/*.golden (rewrite them with `go test ./config -run Golden
// -update`). The engine's name, which depends on the CPU, is replaced by
// ENGINE.
func TestGoldenConfigYAML(t *testing.T) {
	def := Default()
	def.Out = "runs/default"
	auto := Default()
	auto.Data, auto.Out = "data.txt", "runs/auto"
	auto.Batch, auto.Epochs, auto.LR, auto.EvalEvery, auto.EarlyStop, auto.Select = 128, 64, 1e-3, 63, 10, "best"
	auto.Auto, auto.AutoRows = []string{"batch", "epochs", "lr", "eval_every", "early_stop", "select"}, 8000
	path := filepath.Join(t.TempDir(), "custom.yaml")
	if err := os.WriteFile(path, []byte(customised), 0o644); err != nil {
		t.Fatal(err)
	}
	custom, err := LoadYAML(path, Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"config-default", def}, {"config-auto", auto}, {"config-custom", custom}} {
		t.Run(c.name, func(t *testing.T) {
			b, err := Marshal(&c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			b = append([]byte(c.cfg.YAMLHeader()), b...)
			engine := []byte("# matrix engine: " + tensor.Default.Name() + "\n")
			if !bytes.Contains(b, engine) {
				t.Fatalf("no line %q in\n%s", engine, b)
			}
			b = bytes.Replace(b, engine, []byte("# matrix engine: ENGINE\n"), 1)
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), b)
			// What was written reads back to the same configuration.
			back := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(back, b, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := LoadYAML(back, Default())
			if err != nil {
				t.Fatal(err)
			}
			again, err := Marshal(&got)
			if err != nil {
				t.Fatal(err)
			}
			if first, _ := Marshal(&c.cfg); !bytes.Equal(again, first) {
				t.Errorf("read back, the configuration marshals as\n%s\nwant\n%s", again, first)
			}
		})
	}
}
