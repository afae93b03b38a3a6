package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/sweep"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

// sweepOptions are the flags of `sweep`.
type sweepOptions struct {
	out, shardText string
	force, yes     bool
	jobs           int
	shardSet       bool // --shard given, which wins over the environment
}

func newSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep CONFIG --out DIR [--jobs N] [--shard I/N]",
		Short: "Run a grid of training runs (datasets × protections × parameters × seeds) and collect results.csv",
		Long: `sweep reads a sweep file (see experiments/README.md): a base configuration with the keys of
'splitguard train --config', optional datasets and seeds, and a grid whose list values expand into
runs. Each run is a child 'splitguard train' writing DIR/RUN; at most --jobs run at once. Running the
same command again resumes: a run with a summary.json is never run again, an unfinished run is cleaned
and restarted. Failures are recorded (with the end of their stderr) in DIR/results.csv and do not stop
the others. Then run 'splitguard report DIR'.

Many hosts may share DIR (a shared file system): --shard I/N runs only shard I of N, a fixed
assignment balanced by each run's size; on a Slurm job array or a Kubernetes Indexed Job the shard
comes from the environment (SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT; JOB_COMPLETION_INDEX and
SPLITGUARD_SHARD_COUNT). Each run is claimed while it runs and appears in DIR, by one rename, only
when finished; a run whose host died is taken over after its heartbeat stops; results.csv is
rebuilt under a lock by every shard. 'sweep status DIR' shows the state, 'sweep merge DIR' rebuilds
results.csv, 'sweep export --slurm|--k8s' writes the batch job.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.shardSet = cmd.Flags().Changed("shard")
			return runSweep(cmd, args[0], o)
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "sweep directory to write (one sub-directory per run)")
	addForceFlag(cmd.Flags(), &o.force)
	cmd.Flags().IntVar(&o.jobs, "jobs", runtime.NumCPU(), "runs at once (each run itself uses up to 2 cores)")
	cmd.Flags().BoolVar(&o.yes, "yes", false, fmt.Sprintf("run a sweep of more than %d runs", sweep.ConfirmRuns))
	cmd.Flags().StringVar(&o.shardText, "shard", "", "run only shard I of N (e.g. 0/3); default from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX, else the whole sweep")
	cmd.AddCommand(newSweepStatusCmd(), newSweepMergeCmd(), newSweepExportCmd())
	return cmd
}

// runSweep runs the sweep file specPath's runs (those of this shard) as
// o asks, stopped by SIGINT or SIGTERM, and reports the outcome.
func runSweep(cmd *cobra.Command, specPath string, o sweepOptions) error {
	if o.out == "" {
		return fmt.Errorf("sweep: give --out DIR")
	}
	spec, err := sweep.LoadSpec(specPath)
	if err != nil {
		return err
	}
	runs, err := spec.Expand()
	if err != nil {
		return err
	}
	if err := confirmSweep(len(runs), o.jobs, o.yes); err != nil {
		return err
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	shard, source, err := o.shard()
	if err != nil {
		return err
	}
	// SIGTERM: how Slurm (scancel, preemption) and Kubernetes stop a task.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := cmd.ErrOrStderr()
	isTerm := false
	if f, ok := stderr.(*os.File); ok {
		isTerm = term.IsTerminal(int(f.Fd()))
	}
	if shard.Whole() {
		fmt.Fprintf(stderr, "sweep: %d runs into %s, %d at once\n", len(runs), o.out, o.jobs)
	} else {
		fmt.Fprintf(stderr, "sweep: shard %s (from %s) of %d runs into %s, %d at once\n", shard, source, len(runs), o.out, o.jobs)
	}
	outcomes, err := sweep.Run(ctx, runs, o.out, sweep.Options{
		Jobs: o.jobs, Shard: shard, Progress: stderr, Terminal: isTerm, Validate: validateRunConfig, Force: o.force,
	})
	return reportSweep(cmd.OutOrStdout(), stderr, o.out, shard, len(runs), outcomes, err)
}

// shard is the shard to run and where it came from: --shard, which wins
// over the environment (whose errors then do not matter), or the
// environment of a Slurm array or Kubernetes Indexed Job.
func (o sweepOptions) shard() (sweep.Shard, string, error) {
	if o.shardSet {
		shard, err := sweep.ParseShard(o.shardText)
		return shard, "--shard", err
	}
	return sweep.ShardFromEnv(os.Getenv)
}

// reportSweep names each failed run on stderr and, unless the sweep
// itself failed (runErr), says on stdout what the shard ran (of runs)
// into out and what to do next; failed runs make an error.
func reportSweep(stdout, stderr io.Writer, out string, shard sweep.Shard, runs int, outcomes []sweep.Outcome, runErr error) error {
	failed := 0
	for _, o := range outcomes {
		if o.Status == sweep.StatusFailed {
			failed++
			fmt.Fprintf(stderr, "failed: %s — see %s\n", o.Name, filepath.Join(out, sweep.StateDir, "failed", o.Name, "stderr.log"))
		}
	}
	if runErr != nil {
		return runErr
	}
	mine, elsewhere := 0, 0
	for _, o := range outcomes {
		switch o.Status {
		case sweep.StatusOtherShard:
		case sweep.StatusElsewhere:
			elsewhere++
			mine++
		default:
			mine++
		}
	}
	if shard.Whole() {
		fmt.Fprintf(stdout, "wrote %s/results.csv (%d runs, %d failed); next: splitguard report %s\n", out, runs, failed, out)
	} else {
		fmt.Fprintf(stdout, "shard %s: %d of %d runs, %d failed, %d running elsewhere; merged %s/results.csv; see: splitguard sweep status %s\n", shard, mine, runs, failed, elsewhere, out, out)
	}
	if failed > 0 {
		return fmt.Errorf("sweep: %d of %d runs failed", failed, mine)
	}
	return nil
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
