package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/run"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Train on in-memory Criteo-shaped data and show what leaks (no files needed)",
		Long: `demo generates 200,000 rows of Criteo-shaped synthetic data in memory, trains the
authors' split Wide&Deep model for one epoch with no protection and then with Marvell (s = 4), and
prints, for each, the test AUC and how well the norm and cosine attacks recover the labels from the
gradients the passive party received.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				dir, err := os.MkdirTemp("", "splitguard-demo-")
				if err != nil {
					return err
				}
				out = dir
			}
			for _, protect := range []string{"none", "marvell"} {
				cfg := run.Default()
				cfg.SynthRows, cfg.Epochs, cfg.Batch, cfg.LR = 200000, 1, 1024, 1e-3
				cfg.Attacks = []string{"norm", "cosine"}
				cfg.Protect = protect
				if protect == "marvell" {
					cfg.MarvellS = 4
				}
				cfg.Out = filepath.Join(out, protect)
				if err := trainAndReport(cmd.Context(), cfg, "", cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "where to keep the two run directories (default: a new temporary directory)")
	return cmd
}
