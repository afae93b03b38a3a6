package main

import "github.com/spf13/cobra"

// subcommands is filled by the init functions of this package's files, one
// file per command, so that adding a command touches no other file.
var subcommands []func() *cobra.Command

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "splitguard",
		Short:         "Two-party split learning with label-leakage attacks and protections",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, mk := range subcommands {
		root.AddCommand(mk())
	}
	return root
}
