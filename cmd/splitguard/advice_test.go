package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/config"
)

func TestWithFlagNames(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().Float64("test-frac", 0, "")
	cmd.Flags().String("data", "", "")
	for _, tc := range []struct {
		in   string
		keys []string
		want string
	}{
		{"no data (key data)", []string{"data"}, "no data (--data)"},
		{"key test_frac is 0", []string{"test_frac"}, "--test-frac is 0"},
		{"key nope stays", []string{"nope"}, "key nope stays"},
		{"no key here", nil, "no key here"},
		{"key data_dir is not key data", []string{"data"}, "key data_dir is not --data"},
		{"key data named, not refused", nil, "key data named, not refused"},
	} {
		if got := withFlagNames(cmd, tc.in, tc.keys); got != tc.want {
			t.Errorf("withFlagNames(%q, %v) = %q, want %q", tc.in, tc.keys, got, tc.want)
		}
	}
}

// TestErrorWithFlagNamesWalksTheTree: the keys of config.KeyErrors
// wrapped two levels deep, and joined beside another error, become the
// command's flags; a key the command has no flag for stays a key.
func TestErrorWithFlagNamesWalksTheTree(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().Int("batch", 0, "")
	cmd.Flags().String("val-frac", "", "")
	refusal := config.Keyed(errors.New("batch 1 (key batch) needs key val_frac and key nope"), "batch", "val_frac", "nope")
	deep := fmt.Errorf("run: %w", fmt.Errorf("config: %w", refusal))
	if got, want := errorWithFlagNames(cmd, deep), "run: config: batch 1 (--batch) needs --val-frac and key nope"; got != want {
		t.Errorf("two levels deep: %q, want %q", got, want)
	}
	var ke *config.KeyError
	if !errors.As(deep, &ke) || ke.Key != "batch" {
		t.Errorf("errors.As finds %+v, want the key batch", ke)
	}
	joined := errors.Join(errors.New("other"), fmt.Errorf("wrapped: %w", config.Keyed(errors.New("no key batch"), "batch")))
	if got := errorWithFlagNames(cmd, joined); !strings.Contains(got, "no --batch") {
		t.Errorf("joined: %q, want --batch", got)
	}
}

// TestLineLoggerNamesFlags: a warning logged with key=NAME names the
// flag, in its message and its text attributes (a refusal's reason),
// prefixed "warning: " as the run's lines always were; an info line is
// the message alone, other attributes after it.
func TestLineLoggerNamesFlags(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().Int("batch", 0, "")
	var b strings.Builder
	log := newLineLogger(&b, cmd)
	log.Warn("batch size 9 (key batch) exceeds the 4 training rows", "key", "batch")
	log.Info("data: 4 training rows")
	log.Info("resuming", "step", 10)
	log.Warn("refused the run", "reason", "batch 8 (key batch) ≠ 9", "peer", "p", "key", "batch")
	want := "warning: batch size 9 (--batch) exceeds the 4 training rows\ndata: 4 training rows\nresuming step=10\n" +
		"warning: refused the run reason=batch 8 (--batch) ≠ 9 peer=p\n"
	if b.String() != want {
		t.Errorf("logged\n%q\nwant\n%q", b.String(), want)
	}
}
