package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/sweep"
)

func newSweepStatusCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "status DIR",
		Short: "Say which runs of a sweep directory are done, running, failed and missing",
		Long: `status reads a sweep directory (written by 'splitguard sweep', possibly by many shards on many
hosts) and lists the runs that are not done: running (with the host and process holding the run),
failed (with the first line of the error; the run's files are in DIR/.sweep/failed/RUN) and missing
(never started, or their host died: the next sweep of that shard runs them). --all lists done runs
too. The exit status is 0 whatever the state.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			runs, err := sweep.LoadRuns(dir)
			if err != nil {
				return err
			}
			st := sweep.ReadState(dir, runs, 0)
			count := map[string]int{}
			w := cmd.OutOrStdout()
			for _, s := range st {
				count[s.Status]++
				if s.Status == sweep.StatusDone && !all {
					continue
				}
				line := fmt.Sprintf("%-8s %s", s.Status, s.Name)
				if s.Detail != "" {
					line += "  — " + s.Detail
				}
				fmt.Fprintln(w, strings.TrimRight(line, " "))
			}
			fmt.Fprintf(w, "%s: %d runs: %d done, %d running, %d failed, %d missing\n", dir, len(runs),
				count[sweep.StatusDone], count[sweep.StatusRunning], count[sweep.StatusFailed], count[sweep.StatusMissing])
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "list done runs too")
	return cmd
}

func newSweepMergeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "merge DIR",
		Short: "Rebuild DIR/results.csv from every run in a sweep directory",
		Long: `merge rebuilds DIR/results.csv from the run directories and the sweep's own records, under the
directory's lock: one row per run of the sweep, whichever shard or host ran it. Every shard does this
when it finishes; run it by hand after copying runs in, or to see the latest state.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sweep.Merge(args[0], nil, 0); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/results.csv\n", args[0])
			return nil
		},
	}
}
