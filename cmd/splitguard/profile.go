package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/spf13/cobra"
)

func init() { rootOptions = append(rootOptions, addProfileFlags) }

// addProfileFlags gives every command --cpuprofile and --memprofile, which
// write Go pprof profiles of the whole command (read them with `go tool
// pprof`).
func addProfileFlags(root *cobra.Command) {
	var cpuPath, memPath string
	var cpuFile *os.File
	root.PersistentFlags().StringVar(&cpuPath, "cpuprofile", "", "write a CPU profile of the command to this file")
	root.PersistentFlags().StringVar(&memPath, "memprofile", "", "write a heap profile to this file when the command ends")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
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
	root.PersistentPostRunE = func(*cobra.Command, []string) error {
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
