package run_test

import (
	"context"
	"fmt"
	"os"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
)

// ExampleTrain trains the split Wide&Deep model in one process on
// synthetic Criteo-shaped rows with Marvell's protection, auditing the
// norm attack every batch, and reads the summary.
func ExampleTrain() {
	out, err := os.MkdirTemp("", "splitguard-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(out)

	cfg := config.Default()
	cfg.SynthRows, cfg.Batch, cfg.LR, cfg.EvalEvery, cfg.Epochs, cfg.ValFrac = 4000, 256, 3e-3, 0, 1, 0
	cfg.Layers, cfg.Cut = []int{32, 32}, 1
	cfg.Protect, cfg.Params = "marvell", protect.Params{"marvell_s": 4}
	cfg.Out = out
	sum, err := run.Train(context.Background(), cfg, run.Options{})
	if err != nil {
		panic(err)
	}
	// The last batch holds 3585 − 14·256 = 1 row: one class, no AUC.
	leak := sum.Leak["norm/cut"]
	fmt.Println(sum.Steps, "steps,", sum.TrainRows, "training rows, protection", sum.Protect)
	fmt.Println("the norm attack's leak AUC is defined on", leak.Batches, "batches")
	// Output:
	// 15 steps, 3585 training rows, protection marvell
	// the norm attack's leak AUC is defined on 14 batches

}
