package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var out string
	rows := 200000
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Train on in-memory Criteo-shaped data and show what leaks (no files needed)",
		Long: `demo generates 200,000 rows of Criteo-shaped synthetic data in memory, trains the
authors' split Wide&Deep model for one epoch with no protection and then with Marvell (s = 4), and
prints, for each, the test AUC and how well the norm and cosine attacks recover the labels from the
gradients the passive party received.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keep := out != ""
			if !keep {
				// A temporary directory, removed at the end: nothing is
				// left behind unless --out says where to keep the runs.
				dir, err := os.MkdirTemp("", "splitguard-demo-")
				if err != nil {
					return err
				}
				out = dir
				defer os.RemoveAll(dir)
			}
			settings := []string{protect.Reference(), "marvell"}
			sums := make([]*rundir.Summary, len(settings))
			for i, name := range settings {
				cfg := config.Default()
				cfg.SynthRows, cfg.Epochs, cfg.Batch, cfg.LR = rows, 1, 1024, 1e-3
				cfg.Attacks = []string{"norm", "cosine"}
				cfg.Protect = name
				if name == "marvell" {
					cfg.Params = protect.Params{"marvell_s": 4}
				}
				cfg.Out = filepath.Join(out, name)
				sum, err := trainAndReport(cmd.Context(), cfg, "", false, cmd.OutOrStdout(), cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				sums[i] = sum
			}
			printDemoVerdict(cmd.OutOrStdout(), out, keep, sums[0], sums[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where to keep the two run directories (default: a temporary directory, removed at the end)")
	cmd.Flags().IntVar(&rows, "rows", rows, "synthetic rows")
	_ = cmd.Flags().MarkHidden("rows")
	return cmd
}

// printDemoVerdict puts the two demo runs side by side: how well the
// passive party could tell positives from negatives by looking at the
// gradients it received, and what the protection cost in test AUC.
func printDemoVerdict(w io.Writer, dir string, kept bool, none, marvell *rundir.Summary) {
	leak := func(s *rundir.Summary, key string) string {
		l, ok := s.Leak[key]
		if !ok || l.Batches == 0 {
			return "   —  "
		}
		return fmt.Sprintf("%6.3f", l.Q95)
	}
	fmt.Fprintf(w, "\nWhat leaked: q95 over training batches of the leak AUC — how well an attacker who sees only\n")
	fmt.Fprintf(w, "the gradients the passive party received ranks positives above negatives (0.5: no better\n")
	fmt.Fprintf(w, "than chance, 1.0: every label recovered).\n\n")
	fmt.Fprintf(w, "%-18s %10s %12s %10s %13s %9s\n", "", "norm/cut", "cosine/cut", "norm/first", "cosine/first", "test AUC")
	for _, r := range []struct {
		name string
		s    *rundir.Summary
	}{{"no protection", none}, {"Marvell s = 4", marvell}} {
		fmt.Fprintf(w, "%-18s %10s %12s %10s %13s %9.4f\n", r.name, leak(r.s, "norm/cut"), leak(r.s, "cosine/cut"),
			leak(r.s, "norm/first"), leak(r.s, "cosine/first"), r.s.TestAUCSelected)
	}
	if !kept {
		fmt.Fprintf(w, "\nTo keep the run directories (batches.jsonl, eval.jsonl, summary.json) and draw their figures,\n")
		fmt.Fprintf(w, "run: splitguard demo --out DIR, then splitguard report DIR\n")
		return
	}
	fmt.Fprintf(w, "\nRun directories (batches.jsonl, eval.jsonl, summary.json): %s\n", dir)
	fmt.Fprintf(w, "Figures and an HTML page comparing both: splitguard report %s\n", dir)
}
