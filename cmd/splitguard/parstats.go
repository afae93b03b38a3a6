package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/internal/par"
)

// parStatsLine says in one line what --par-stats counted: how many
// parallel calls the command made and how their parts were shared, how
// long the callers waited for the workers' last parts, how long the
// workers spun looking for parts (wall time, including what they yielded
// to other goroutines) and how often they parked (early, to make way for
// a goroutine waiting for a processor, or at the spin's end), and the stretches
// between calls (the callers' serial code, or idle time).
func parStatsLine(s par.Stats) string {
	each, onWorkers := 0.0, 0.0
	if s.Calls > 0 {
		each = float64(s.Parts) / float64(s.Calls)
	}
	if s.Parts > 0 {
		onWorkers = 100 * float64(s.WorkerParts) / float64(s.Parts)
	}
	return fmt.Sprintf("par-stats: %d parallel calls, %.1f parts each, %.0f%% of the parts on workers; "+
		"callers waited %v for the workers' last parts; workers spun %v and parked %d times (%d early, for a waiting goroutine); "+
		"%d stretches between calls, %v in all, %d of them under %v (%v)",
		s.Calls, each, onWorkers, s.Wait.Round(time.Microsecond), s.Spin.Round(time.Microsecond), s.Parks, s.Yields,
		s.Gaps, s.Between.Round(time.Microsecond), s.ShortGaps, par.SpinTime(), s.Short.Round(time.Microsecond))
}

// childFlags are the flags of this command that its child processes
// (bench --cores, --whole-run) must get too: --par-spin when given.
func childFlags(cmd *cobra.Command) []string {
	if f := cmd.Flags().Lookup("par-spin"); f != nil && f.Changed {
		return []string{"--par-spin", f.Value.String()}
	}
	return nil
}
