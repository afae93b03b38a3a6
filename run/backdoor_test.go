package run

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// backdoorConfig is a small run on a CSV table whose label is
// p1 + p2 + 0.5·a1 > 0 (5% flipped): the passive party holds p1…p4 (p3 and
// p4 noise, where gradient replacement's trigger goes), the active a1.
func backdoorConfig(t testing.TB, rows int, dataSeed uint64) config.Config {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "backdoor.csv")
	rng := rand.New(rand.NewPCG(dataSeed, 13))
	var b strings.Builder
	b.WriteString("id,label,p1,p2,p3,p4,a1\n")
	for i := range rows {
		p1, p2, p3, p4, a1 := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		y := 0
		if p1+p2+0.5*a1 > 0 {
			y = 1
		}
		if rng.Float64() < 0.05 {
			y = 1 - y
		}
		fmt.Fprintf(&b, "%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f\n", i, y, p1, p2, p3, p4, a1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Data, c.Format, c.Label, c.IDCol = path, data.FormatCSV, "label", "id"
	c.Numeric = []string{"p1", "p2", "p3", "p4", "a1"}
	c.PassiveColumns, c.ActiveColumns = []string{"p1", "p2", "p3", "p4"}, []string{"a1"}
	c.Batch, c.Epochs, c.LR, c.EvalEvery, c.EarlyStop = 100, 4, 1e-2, 0, 0
	c.Layers, c.Cut = []int{16, 16}, 2
	c.Attacks, c.Baseline, c.Select = []string{"norm"}, false, config.SelectLast
	c.BackdoorTarget = 1
	c.Out = filepath.Join(dir, "run")
	return c
}

// TestGradientReplacementSucceedsAboveHonest: on the same table and seed,
// gradient replacement as VFLAIR runs it — its in-batch pairing, its
// unamplified gradient (γ = 1) and about one known target row per batch
// (27 known rows, batches of 100); its trigger: p3 at its training
// maximum, p4 at its minimum — succeeds on at least 3 in 4 non-target
// rows where the same trigger on an honestly trained model (a dry run)
// scores near 0, and the clean test AUC stays within 0.01 of the honest
// one (measured 2026-11-27: 0.864 against 0.086, 0.908 against 0.916;
// with the fixed pairing and 10 known rows, before, 0.850 and 0.909);
// summary.json holds both.
func TestGradientReplacementSucceedsAboveHonest(t *testing.T) {
	asr := map[bool]float64{}
	auc := map[bool]float64{}
	for _, attacked := range []bool{false, true} {
		cfg := backdoorConfig(t, 3000, 21)
		cfg.Seed = 5
		cfg.Backdoor, cfg.BackdoorDryRun = "gradient_replacement", !attacked
		cfg.BackdoorAmplify, cfg.BackdoorKnown = 1, 27
		sum, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Backdoor == nil || sum.Backdoor.DryRun == attacked {
			t.Fatalf("attacked=%t: backdoor outcome %+v", attacked, sum.Backdoor)
		}
		asr[attacked], auc[attacked] = sum.Backdoor.ASR, sum.Backdoor.CleanTestAUC
		t.Logf("attacked=%t: ASR %.3f over %d rows, clean test AUC %.3f", attacked, sum.Backdoor.ASR, sum.Backdoor.ASRRows, sum.Backdoor.CleanTestAUC)
		if math.Abs(sum.Backdoor.CleanTestAUC-sum.TestAUCFinal) > 1e-9 {
			t.Errorf("attacked=%t: clean test AUC %g, the run's final test AUC %g", attacked, sum.Backdoor.CleanTestAUC, sum.TestAUCFinal)
		}
	}
	if asr[true] < 0.75 || asr[false] > 0.2 {
		t.Errorf("attack success rate %.3f, honest %.3f: want ≥ 0.75 and ≤ 0.2", asr[true], asr[false])
	}
	if math.Abs(auc[true]-auc[false]) > 0.01 {
		t.Errorf("clean test AUC %.3f, honest %.3f", auc[true], auc[false])
	}
}

// TestVillainSucceedsAboveHonest: on Criteo-shaped synthetic rows with
// the settings of experiments/integrity.yaml (the passive party holds
// I1…I13, C1…C3; 3 epochs; from step 64), VILLAIN from ten known rows
// infers its poison budget (1% of the training rows) and more by
// embedding swapping, at least 95% of them rightly (checked against the
// labels, which the attack never sees); its trigger (β = 0.4) succeeds on
// at least 9 in 10 non-target test rows where the same trigger on an
// honestly trained model (a dry run) scores at most 0.2, and the clean
// test AUC stays within 0.01 of the honest one (measured 2026-11-27:
// 0.953 against 0.086; 0.797 against 0.792).
func TestVillainSucceedsAboveHonest(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two runs of 20,000 rows")
	}
	asr := map[bool]float64{}
	auc := map[bool]float64{}
	for _, attacked := range []bool{false, true} {
		cfg := config.Default()
		cfg.SynthRows, cfg.Seed, cfg.Epochs, cfg.Batch, cfg.LR = 20000, 1, 3, 256, 0.01
		cfg.EvalEvery, cfg.ValFrac, cfg.Select, cfg.EarlyStop, cfg.Baseline = 0, 0, config.SelectLast, 0, false
		cfg.PassiveColumns = []string{"I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10", "I11", "I12", "I13", "C1", "C2", "C3"}
		cfg.Out = filepath.Join(t.TempDir(), "run")
		cfg.Backdoor, cfg.BackdoorTarget, cfg.BackdoorFrom, cfg.BackdoorDryRun = "villain", 1, 64, !attacked
		sum, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b := sum.Backdoor
		if b == nil || b.DryRun == attacked {
			t.Fatalf("attacked=%t: backdoor outcome %+v", attacked, b)
		}
		asr[attacked], auc[attacked] = b.ASR, b.CleanTestAUC
		t.Logf("attacked=%t: ASR %.3f over %d rows (by quarter of the clean model's confidence, surest first: %v), clean test AUC %.4f", attacked, b.ASR, b.ASRRows, b.ASRByConfidence, b.CleanTestAUC)
		if !attacked {
			continue
		}
		if b.InferredPrecision == nil {
			t.Fatalf("no inference outcome in the summary: %+v", b)
		}
		t.Logf("inferred %d, precision %.3f", b.Inferred, *b.InferredPrecision)
		if b.Inferred < 180 || *b.InferredPrecision < 0.95 {
			t.Errorf("inferred %d rows, precision %.3f: want ≥ 180 and ≥ 0.95", b.Inferred, *b.InferredPrecision)
		}
	}
	if asr[true] < 0.9 || asr[false] > 0.2 {
		t.Errorf("attack success rate %.3f, honest %.3f: want ≥ 0.9 and ≤ 0.2", asr[true], asr[false])
	}
	if math.Abs(auc[true]-auc[false]) > 0.01 {
		t.Errorf("clean test AUC %.4f, honest %.4f", auc[true], auc[false])
	}
}
