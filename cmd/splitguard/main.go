// Command splitguard runs two-party split learning, attacks it the way the
// label-leakage papers do, and protects it. See the README for a tour and docs/CLI.md for every command.
package main

import (
	"fmt"
	"os"

	_ "github.com/splitguard/splitguard/data/images" // registers the image set formats fashion-mnist and isic
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "splitguard:", err)
		if code := stopped.Load(); code != 0 {
			os.Exit(int(code)) // a signal stopped the run (signals.go)
		}
		os.Exit(1)
	}
}
