package main

import (
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
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
