package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/report"
)

func init() { subcommands = append(subcommands, newReportCmd) }

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Draw the figures of a run or sweep directory and write DIR/report/index.html",
		Long: `report reads a run directory (config.yaml, batches.jsonl, eval.jsonl, summary.json) or a sweep
directory (results.csv and one sub-directory per run) and writes DIR/report/: index.html, a
self-contained page (figures embedded, no network needed) with the privacy–utility trade-off, leak AUC
over training per attack and layer, leakage per passive layer, Marvell's sumKL and bound, test AUC over
training and a sortable table of every run; and every figure as PNG and SVG beside it.
Missing files and null values become notes in the page.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			index, err := report.Write(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "wrote", index)
			return nil
		},
	}
}
