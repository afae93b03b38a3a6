package main

import "github.com/spf13/cobra"

// subcommands is filled by the init functions of this package's files, one
// file per command, so that adding a command touches no other file.
var subcommands []func() *cobra.Command

// rootOptions is filled likewise with functions that add persistent flags
// (and their hooks) to the root command.
var rootOptions []func(*cobra.Command)

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
	for _, opt := range rootOptions {
		opt(root)
	}
	adviseFlags(root)
	return root
}

// adviseFlags makes every command's errors name its flags where the
// library named configuration keys (see errorWithFlagNames).
func adviseFlags(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			if err == nil {
				return nil
			}
			if msg := withForceAdvice(c, errorWithFlagNames(c, err), err); msg != err.Error() {
				return &advisedError{msg: msg, err: err}
			}
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		adviseFlags(sub)
	}
}

// advisedError is an error whose text names flags; it unwraps to the
// library's error.
type advisedError struct {
	msg string
	err error
}

func (e *advisedError) Error() string { return e.msg }
func (e *advisedError) Unwrap() error { return e.err }
