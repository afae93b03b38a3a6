package main

import (
	"errors"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/sweep"
)

// keyRef is how library errors name a configuration key: "key NAME",
// optionally in parentheses.
var keyRef = regexp.MustCompile(`(\(?)key ([a-z][a-z0-9_]*)(\)?)`)

// withFlagNames rewrites the configuration keys an error names into the
// flags of cmd that set them ("key test_frac" → "--test-frac"): library
// errors state the fact in the library's terms, the command line names
// its own flags.
func withFlagNames(cmd *cobra.Command, msg string) string {
	return keyRef.ReplaceAllStringFunc(msg, func(m string) string {
		sub := keyRef.FindStringSubmatch(m)
		flag := strings.ReplaceAll(sub[2], "_", "-")
		if cmd == nil || cmd.Flags().Lookup(flag) == nil {
			return m
		}
		return sub[1] + "--" + flag + sub[3]
	})
}

// flagNamesWriter rewrites the configuration keys named in the run's log
// lines (warnings such as a batch larger than the training split) into
// the flags of train.
type flagNamesWriter struct{ w io.Writer }

func (f flagNamesWriter) Write(b []byte) (int, error) {
	if !keyRef.Match(b) {
		return f.w.Write(b)
	}
	if _, err := io.WriteString(f.w, withFlagNames(newTrainCmd(), string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// addForceFlag adds --force, which lets a command replace another run in
// its --out.
func addForceFlag(fs *pflag.FlagSet, force *bool) {
	fs.BoolVar(force, "force", false, "replace another run (or sweep) that --out holds: a finished one, or one of another configuration")
}

// withForceAdvice adds to msg, the text of err, how to replace the other
// run that err says --out holds, where cmd has --force.
func withForceAdvice(cmd *cobra.Command, msg string, err error) string {
	if !errors.Is(err, rundir.ErrOtherRun) && !errors.Is(err, sweep.ErrOtherSweep) {
		return msg
	}
	if cmd == nil || cmd.Flags().Lookup("force") == nil {
		return msg
	}
	return msg + "; give another --out, or --force to replace it"
}
