package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/marvell"
)

// expectOptions are the flags of `marvell expect`.
type expectOptions struct {
	S      []float64
	Design marvell.Design // every field but S
	JSON   bool
}

func newMarvellExpectCmd() *cobra.Command {
	var o expectOptions
	cmd := &cobra.Command{
		Use:   "expect",
		Short: "What leak figures Marvell can reach for a batch design, under its own Gaussian model",
		Long: `Simulates, for each s, the per-batch leak AUC of the direction attack on
Marvell-protected gradients under Marvell's own model of the data (Gaussian
classes with isotropic spread, means ‖Δ‖ apart): each batch draws its
positives from Binomial(batch, pos-rate), Marvell is solved at the batch's
positive fraction, and the attacker scores rows by their projection on Δ —
what the oracle cosine attack amounts to once the noise along Δ dominates
the within-class spread. It prints what a run's summary would show (mean,
q95 and q95 |AUC−½|), the population AUC of that attacker, Theorem 1's
worst-case bound, and the chance floor: the q95 |AUC−½| that scores
independent of the labels give at the same batch size.

Use it to read a run's figures (how much of a q95 is the batch size) and to
pick s for a target before training. It is a reference, not a bound: real
gradients are not Gaussian, and within-class spread (--spread) lowers the
leak.`,
		Example: `  splitguard marvell expect --s 0.1,1,4 --batch 1024 --pos-rate 0.25
  splitguard marvell expect --s 4,10 --batch 128 --pos-rate 0.1 --d 1600`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMarvellExpect(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.Float64SliceVar(&o.S, "s", []float64{0.1, 1, 4}, "Marvell's s values (P = s·‖Δ‖²), comma-separated")
	d := &o.Design
	f.IntVar(&d.Batch, "batch", 1024, "rows per batch")
	f.Float64Var(&d.PosRate, "pos-rate", 0.25, "probability that a row is positive")
	f.IntVar(&d.Dim, "d", 128, "gradient dimension")
	f.Float64Var(&d.Spread, "spread", 0, "each class's within-class variance (trace) relative to ‖Δ‖²")
	f.IntVar(&d.Batches, "batches", 1000, "simulated batches per s")
	f.Uint64Var(&d.Seed, "seed", 1, "random seed")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object per s")
	return cmd
}

// expectRecord is one JSON line of `marvell expect --json`.
type expectRecord struct {
	S             float64 `json:"s"`
	Batch         int     `json:"batch"`
	PosRate       float64 `json:"pos_rate"`
	D             int     `json:"d"`
	Spread        float64 `json:"spread"`
	Batches       int     `json:"batches"`
	Skipped       int     `json:"skipped"`
	Lam10         float64 `json:"lam10"`
	Lam20         float64 `json:"lam20"`
	Lam11         float64 `json:"lam11"`
	Lam21         float64 `json:"lam21"`
	SumKL         float64 `json:"sumKL"`
	AUCBound      float64 `json:"auc_bound"`
	ProjectionAUC float64 `json:"projection_auc"`
	Mean          float64 `json:"mean"`
	Q95           float64 `json:"q95"`
	Q95Abs        float64 `json:"q95_abs"`
	ChanceQ95Abs  float64 `json:"chance_q95_abs"`
}

func runMarvellExpect(w io.Writer, o expectOptions) error {
	if len(o.S) == 0 {
		return fmt.Errorf("marvell expect: --s needs at least one value")
	}
	results := make([]marvell.Expectation, 0, len(o.S))
	for _, s := range o.S {
		d := o.Design
		d.S = s
		e, err := marvell.Expect(d)
		if err != nil {
			return err
		}
		results = append(results, e)
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, e := range results {
			n := e.Nominal
			if err := enc.Encode(expectRecord{e.S, e.Batch, e.PosRate, e.Dim, e.Spread, e.Batches, e.Skipped,
				n.Lam10, n.Lam20, n.Lam11, n.Lam21, n.SumKL, e.AUCBound, e.ProjectionAUC,
				e.Mean, e.Q95, e.Q95Abs, e.ChanceQ95Abs}); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(w, "batch %d, positive rate %g, d = %d, spread %g, %d batches per s (seed %d); ‖Δ‖ = 1\n",
		o.Design.Batch, o.Design.PosRate, o.Design.Dim, o.Design.Spread, o.Design.Batches, o.Design.Seed)
	fmt.Fprintf(w, "%8s %8s %8s %9s %9s %10s %8s %8s %9s %8s\n",
		"s", "λ₁⁽⁰⁾", "λ₁⁽¹⁾", "sumKL*", "AUC bound", "proj. AUC", "mean", "q95", "q95|-.5|", "chance")
	fmt.Fprintln(w, strings.Repeat("-", 96))
	for _, e := range results {
		fmt.Fprintf(w, "%8g %8.4f %8.4f %9.4f %9.4f %10.4f %8.4f %8.4f %9.4f %8.4f\n",
			e.S, e.Nominal.Lam10, e.Nominal.Lam11, e.Nominal.SumKL, e.AUCBound, e.ProjectionAUC,
			e.Mean, e.Q95, e.Q95Abs, e.ChanceQ95Abs)
	}
	return nil
}
