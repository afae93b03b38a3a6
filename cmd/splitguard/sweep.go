package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/sweep"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

func newSweepCmd() *cobra.Command {
	var out string
	var jobs int
	var yes bool
	cmd := &cobra.Command{
		Use:   "sweep CONFIG --out DIR [--jobs N]",
		Short: "Run a grid of training runs (datasets × protections × parameters × seeds) and collect results.csv",
		Long: `sweep reads a sweep file (see experiments/README.md): a base configuration with the keys of
'splitguard train --config', optional datasets and seeds, and a grid whose list values expand into
runs. Each run is a child 'splitguard train' writing DIR/RUN; at most --jobs run at once. Running the
same command again resumes: a run with a summary.json is never run again, an unfinished run is cleaned
and restarted. Failures are recorded (with the end of their stderr) in DIR/results.csv and do not stop
the others. Then run 'splitguard report DIR'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("sweep: give --out DIR")
			}
			spec, err := sweep.LoadSpec(args[0])
			if err != nil {
				return err
			}
			runs, err := spec.Expand()
			if err != nil {
				return err
			}
			if err := confirmSweep(len(runs), jobs, yes); err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
			defer stop()
			stderr := cmd.ErrOrStderr()
			isTerm := false
			if f, ok := stderr.(*os.File); ok {
				isTerm = term.IsTerminal(int(f.Fd()))
			}
			fmt.Fprintf(stderr, "sweep: %d runs into %s, %d at once\n", len(runs), out, jobs)
			outcomes, err := sweep.Run(ctx, runs, out, sweep.Options{
				Jobs: jobs, Progress: stderr, Terminal: isTerm, Validate: validateRunConfig,
			})
			failed := 0
			for _, o := range outcomes {
				if o.Status == sweep.StatusFailed {
					failed++
					fmt.Fprintf(stderr, "failed: %s — see %s/%s/stderr.log\n", o.Name, out, o.Name)
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/results.csv (%d runs, %d failed); next: splitguard report %s\n", out, len(runs), failed, out)
			if failed > 0 {
				return fmt.Errorf("sweep: %d of %d runs failed", failed, len(runs))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "sweep directory to write (one sub-directory per run)")
	cmd.Flags().IntVar(&jobs, "jobs", runtime.NumCPU(), "runs at once (each run itself uses up to 2 cores)")
	cmd.Flags().BoolVar(&yes, "yes", false, fmt.Sprintf("run a sweep of more than %d runs", sweep.ConfirmRuns))
	return cmd
}

// validateRunConfig checks a sweep run's config.yaml the way train will
// read it, so that a typo fails before any run starts.
func validateRunConfig(path string) error {
	cfg, err := config.LoadFile(path, config.Default())
	if err != nil {
		return err
	}
	return cfg.Validate()
}

// confirmSweep refuses a sweep of more than sweep.ConfirmRuns runs unless
// yes, naming its size and a time estimate (at one minute per run).
func confirmSweep(runs, jobs int, yes bool) error {
	if runs <= sweep.ConfirmRuns || yes {
		return nil
	}
	hours := float64(runs) / float64(max(jobs, 1)) / 60
	return fmt.Errorf("sweep: the grid expands to %d runs, about %.0f hours with --jobs %d at one minute per run; give --yes to run it, or make the grid smaller",
		runs, hours, jobs)
}
