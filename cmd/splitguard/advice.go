package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/sweep"
)

// errorWithFlagNames returns err's text with the configuration keys it
// refuses named as the flags of cmd that set them: the keys of every
// config.KeyError in err's tree (text alone is never read for keys).
func errorWithFlagNames(cmd *cobra.Command, err error) string {
	return withFlagNames(cmd, err.Error(), config.KeysOf(err))
}

// withFlagNames rewrites, in msg, each "key NAME" of the keys given into
// the flag of cmd that sets NAME ("key test_frac" → "--test-frac"):
// library errors state the fact in the library's terms, the command line
// names its own flags. A key cmd has no flag for stays as it is.
func withFlagNames(cmd *cobra.Command, msg string, keys []string) string {
	if cmd == nil {
		return msg
	}
	for _, k := range keys {
		flag := strings.ReplaceAll(k, "_", "-")
		if cmd.Flags().Lookup(flag) == nil {
			continue
		}
		msg = replaceWord(msg, "key "+k, "--"+flag)
	}
	return msg
}

// replaceWord replaces every old in s that no letter, digit or underscore
// follows (so "key data" leaves "key data_dir" alone) by repl.
func replaceWord(s, old, repl string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		b.WriteString(s[:i])
		if end < len(s) && isKeyByte(s[end]) {
			b.WriteString(old)
		} else {
			b.WriteString(repl)
		}
		s = s[end:]
	}
}

func isKeyByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
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
