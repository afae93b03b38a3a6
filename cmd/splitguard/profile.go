package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/internal/par"
)

func init() { rootOptions = append(rootOptions, addProfileFlags) }

// addProfileFlags gives every command --cpuprofile and --memprofile, which
// write Go pprof profiles of the whole command (read them with `go tool
// pprof`), and --trace, which writes the Go execution trace (`go tool
// trace`: which goroutine ran on which processor when, and where a
// processor sat idle), --par-stats, which prints what the step's
// parallel parts cost beyond their work (parStatsLine), and --par-spin,
// how long the workers of those parts spin before they park.
func addProfileFlags(root *cobra.Command) {
	var cpuPath, memPath, tracePath string
	var parStats bool
	var parSpin time.Duration
	var cpuFile, traceFile *os.File
	root.PersistentFlags().StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile of the command to this file")
	root.PersistentFlags().StringVar(&memPath, "memprofile", "", "write a heap profile to this file when the command ends")
	root.PersistentFlags().StringVar(&tracePath, "trace", "", "write the Go execution trace of the command to this file (go tool trace)")
	root.PersistentFlags().BoolVar(&parStats, "par-stats", false, "print, when the command ends, how the parallel parts of its steps used the cores: calls, parts on the workers, waiting, spinning")
	root.PersistentFlags().DurationVar(&parSpin, "par-spin", par.Spin, "how long an idle worker of the step's parallel parts spins before it parks (0 to "+par.MaxSpin.String()+"; shorter where other processes share the cores)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		par.Measure(parStats)
		if err := par.SetSpin(parSpin); err != nil {
			return fmt.Errorf("--par-spin %v: want 0 to %v", parSpin, par.MaxSpin)
		}
		if tracePath != "" {
			f, err := os.Create(tracePath)
			if err != nil {
				return fmt.Errorf("--trace: %w", err)
			}
			if err := trace.Start(f); err != nil {
				f.Close()
				return fmt.Errorf("--trace: %w", err)
			}
			traceFile = f
		}
		if cpuPath == "" {
			return nil
		}
		f, err := os.Create(cpuPath)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		cpuFile = f
		return nil
	}
	root.PersistentPostRunE = func(c *cobra.Command, _ []string) error {
		if parStats {
			fmt.Fprintln(c.ErrOrStderr(), parStatsLine(par.Read()))
		}
		if traceFile != nil {
			trace.Stop()
			if err := traceFile.Close(); err != nil {
				return fmt.Errorf("--trace: %w", err)
			}
		}
		if cpuFile != nil {
			pprof.StopCPUProfile()
			if err := cpuFile.Close(); err != nil {
				return fmt.Errorf("--cpuprofile: %w", err)
			}
		}
		if memPath == "" {
			return nil
		}
		f, err := os.Create(memPath)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--memprofile: %w", err)
		}
		return f.Close()
	}
}
