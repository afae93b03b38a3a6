package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/data"
)

func init() { subcommands = append(subcommands, newDataCmd) }

// newDataCmd builds the "data" command group: synth and inspect.
func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Generate and inspect tabular data sets",
	}
	cmd.AddCommand(newDataSynthCmd(), newDataInspectCmd())
	return cmd
}

// newDataSynthCmd builds "data synth".
func newDataSynthCmd() *cobra.Command {
	var (
		rows    int64
		posRate float64
		seed    uint64
		out     string
	)
	cmd := &cobra.Command{
		Use:   "synth --rows N --out FILE",
		Short: "Write synthetic Criteo-format data (TSV, no header)",
		Long: `Writes N synthetic examples in the format of Criteo's Kaggle train.txt:
tab-separated, no header, label, 13 integer columns, 26 categorical columns of
8 hex digits, NA as an empty field. Category frequencies follow power laws,
integers are heavy-tailed, and the label follows a logistic model of a few
features and interactions, with positives less predictable than negatives.
The same flags always give the same bytes. --out - writes to standard output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rows <= 0 {
				return fmt.Errorf("data synth: --rows must be positive, got %d", rows)
			}
			if out == "" {
				return fmt.Errorf("data synth: --out is required")
			}
			start := time.Now()
			if out == "-" {
				return data.WriteSynth(cmd.OutOrStdout(), rows, posRate, seed)
			}
			err := atomicfile.Write(out, 0o644, func(w io.Writer) error { return data.WriteSynth(w, rows, posRate, seed) })
			if err != nil {
				return fmt.Errorf("data synth: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %d rows to %s in %.1fs\n", rows, out, time.Since(start).Seconds())
			return nil
		},
	}
	cmd.Flags().Int64Var(&rows, "rows", 0, "number of examples to write (required)")
	cmd.Flags().Float64Var(&posRate, "pos-rate", data.DefaultSynthPosRate, "expected share of positive labels, in (0, 1)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&out, "out", "", "output file, or - for standard output (required)")
	return cmd
}

// newDataInspectCmd builds "data inspect".
func newDataInspectCmd() *cobra.Command {
	var (
		o       data.Options
		cardCap int
	)
	cmd := &cobra.Command{
		Use:   "inspect FILE",
		Short: "Summarise a table: rows, positive rate, and per-column kind, NA share, cardinality, range",
		Long: `Streams FILE once and prints its row count, positive rate and, for every
column, its kind (label, id, dense, categorical), NA share, number of distinct
values (exact up to --cap per column, then a HyperLogLog estimate marked ≈) and,
for dense columns, min, max and mean of the non-empty values. Column kinds are
resolved as "run" would load the file. A ".gz" file is decompressed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := data.Inspect(args[0], o, cardCap)
			if err != nil {
				return err
			}
			return rep.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", data.FormatCriteo, "table format: criteo, avazu or csv")
	f.StringVar(&o.LabelCol, "label", "", "label column (default: the format's; none for csv)")
	f.StringVar(&o.Positive, "positive", "", "label value meaning positive (default: labels are 0/1)")
	f.StringVar(&o.IDCol, "id", "", "example-ID column")
	f.BoolVar(&o.NoLabel, "no-label", false, "the table has no label column")
	f.StringSliceVar(&o.Dense, "dense", nil, "columns to treat as dense")
	f.StringSliceVar(&o.Categorical, "categorical", nil, "columns to treat as categorical")
	f.IntVar(&cardCap, "cap", data.DefaultCardinalityCap, "distinct values counted exactly per column before estimating")
	return cmd
}
