package main

import (
	"testing"

	"github.com/spf13/cobra"
)

func TestWithFlagNames(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().Float64("test-frac", 0, "")
	cmd.Flags().String("data", "", "")
	for _, tc := range []struct{ in, want string }{
		{"no data (key data)", "no data (--data)"},
		{"key test_frac is 0", "--test-frac is 0"},
		{"key nope stays", "key nope stays"},
		{"no key here", "no key here"},
	} {
		if got := withFlagNames(cmd, tc.in); got != tc.want {
			t.Errorf("withFlagNames(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
