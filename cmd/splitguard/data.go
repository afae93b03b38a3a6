package main

import (
	"fmt"
	"io"
	"strings"
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
for numeric columns, min, max and mean of the values that are not missing (empty,
NA, NaN, null, None, ?, inf). Column kinds are resolved as train would load the
file: a csv column is numeric when every value that is not missing is a number,
over the whole file (--numeric, --categorical and --ignore decide instead). The
label values are counted, so a first look tells which to pass as --positive. A
".gz" file is decompressed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := data.Inspect(args[0], o, cardCap)
			if err != nil {
				return err
			}
			var text strings.Builder
			if err := rep.WriteText(&text); err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), withFlagNames(cmd, text.String(), data.InspectTextKeys))
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", data.FormatCriteo, "table format: "+strings.Join(data.TableFormats(), ", "))
	f.StringVar(&o.LabelCol, "label", "", "label column (default: the format's; csv: none, the label values are then not counted)")
	f.StringSliceVar(&o.Positive, "positive", nil, "label values of the positive class (default: labels are 0/1)")
	f.StringSliceVar(&o.Negative, "negative", nil, "label values of the negative class")
	idColFlags(f, &o.IDCol)
	f.BoolVar(&o.NoLabel, "no-label", false, "the table has no label column")
	f.StringSliceVar(&o.Dense, "numeric", nil, "columns to read as numeric")
	f.StringSliceVar(&o.Dense, "dense", nil, "the same as --numeric")
	_ = f.MarkHidden("dense")
	f.StringSliceVar(&o.Categorical, "categorical", nil, "columns to read as categorical")
	f.StringSliceVar(&o.Ignore, "ignore", nil, "columns not to read")
	f.IntVar(&cardCap, "cap", data.DefaultCardinalityCap, "distinct values counted exactly per column before estimating")
	return cmd
}
