// Command splitguard runs two-party split learning, attacks it the way the
// label-leakage papers do, and protects it. README.md gives a tour,
// docs/CLI.md every command; each command is one file of this package that
// adds itself to the command tree in init().
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
