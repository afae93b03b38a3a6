package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/data/images"
	"github.com/splitguard/splitguard/dump"
)

func init() { subcommands = append(subcommands, newAttackCmd) }

func newAttackCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attack",
		Short: "Offline attacks on a run's --dump directory or its trained bottom model",
	}
	var (
		dumpDir, labels, fashion, on string
		seed                         uint64
	)
	mc := &cobra.Command{
		Use:   "multiclass",
		Short: "Multi-class spectral attack (k-means) on the dumped batches",
		Long: `Runs the multi-class form of the spectral attack (METHODS §3) on every batch of
a --dump directory: k-means with k = the number of classes in the batch on the
chosen array (--on, default the cut-layer embedding), clusters matched to the
classes by size, and prints one JSON line per batch
  {"step": …, "rows": …, "classes": …, "accuracy": …, "majority": …}
(majority: the share of the batch's most frequent class, the accuracy of a
constant guess) and a last line {"batches": …, "mean_accuracy": …,
"mean_majority": …}.

The classes come from --labels FILE.npy, a 1-D integer array indexed by
example ID (class < 256), or --fashion-mnist DIR, the Fashion-MNIST label
files (IDs as the run assigned them: training row i has ID i), so a binary
Fashion-MNIST run can be attacked on all ten classes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dumpDir == "" {
				return fmt.Errorf("attack multiclass: --dump is required")
			}
			if (labels == "") == (fashion == "") {
				return fmt.Errorf("attack multiclass: give exactly one of --labels and --fashion-mnist")
			}
			if !slices.Contains(dump.Arrays, on) {
				return fmt.Errorf("attack multiclass: --on %q, want one of %s", on, strings.Join(dump.Arrays, ", "))
			}
			var classes []uint8
			var err error
			if labels != "" {
				classes, err = dump.ReadClassesNPY(labels)
			} else {
				classes, err = images.FashionMNISTClasses(fashion)
			}
			if err != nil {
				return fmt.Errorf("attack multiclass: %w", err)
			}
			return attackMultiClass(cmd.OutOrStdout(), dumpDir, classes, on, seed)
		},
	}
	mc.Flags().StringVar(&dumpDir, "dump", "", "dump directory of a run (train --dump DIR)")
	mc.Flags().StringVar(&labels, "labels", "", "1-D integer .npy of classes indexed by example ID")
	mc.Flags().StringVar(&fashion, "fashion-mnist", "", "Fashion-MNIST directory whose label files give the classes")
	mc.Flags().StringVar(&on, "on", "cut_embedding", "array attacked: "+strings.Join(dump.Arrays, ", "))
	mc.Flags().Uint64Var(&seed, "seed", 1, "seed of the k-means seeding")
	cmd.AddCommand(mc, newAttackCompletionCmd(), newAttackFeaturesCmd())
	return cmd
}

// multiClassSummary is the last line of `attack multiclass`.
type multiClassSummary struct {
	Batches      int     `json:"batches"`
	MeanAccuracy float64 `json:"mean_accuracy"`
	MeanMajority float64 `json:"mean_majority"`
}

// attackMultiClass runs audit.MultiClass on array `on` of every batch of
// the dump and writes the JSON lines.
func attackMultiClass(w io.Writer, dumpDir string, classes []uint8, on string, seed uint64) error {
	enc := json.NewEncoder(w)
	var sum multiClassSummary
	err := dump.Read(dumpDir, func(b *dump.Batch) error {
		res, err := audit.MultiClass(b.Step, b.Arrays[on], b.IDs, classes, seed)
		if err != nil {
			return err
		}
		sum.Batches++
		sum.MeanAccuracy += res.Accuracy
		sum.MeanMajority += res.Majority
		return enc.Encode(res)
	})
	if err != nil {
		return fmt.Errorf("attack multiclass: %w", err)
	}
	if sum.Batches == 0 {
		return fmt.Errorf("attack multiclass: %s holds no batches", dumpDir)
	}
	sum.MeanAccuracy /= float64(sum.Batches)
	sum.MeanMajority /= float64(sum.Batches)
	return enc.Encode(sum)
}
