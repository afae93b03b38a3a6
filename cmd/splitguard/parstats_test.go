package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/internal/par"
)

// TestParSpinFlag: --par-spin sets the workers' spin, is refused out of
// range with an error naming it, and goes on to bench's children.
func TestParSpinFlag(t *testing.T) {
	defer par.SetSpin(par.Spin)
	cmd := newRootCmd()
	cmd.SetOut(&bytes.Buffer{})
	var errOut bytes.Buffer
	cmd.SetErr(&errOut)
	cmd.SetArgs([]string{"bench", "--batch", "32", "--vocab", "50", "--steps", "2", "--warmup", "0", "--par-spin", "50us", "--par-stats"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := par.SpinTime(); got != 50*time.Microsecond {
		t.Errorf("after --par-spin 50us the spin is %v", got)
	}
	if !strings.Contains(errOut.String(), "par-stats: ") || !strings.Contains(errOut.String(), "under 50µs") {
		t.Errorf("--par-stats printed %q", errOut.String())
	}
	for _, bad := range []string{"-1us", "11ms"} {
		cmd := newRootCmd()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs([]string{"bench", "--batch", "32", "--vocab", "50", "--steps", "1", "--par-spin", bad})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--par-spin") {
			t.Errorf("--par-spin %s: error %v, want one naming --par-spin", bad, err)
		}
	}
	o := benchOptions{Model: "wdl", Batch: 8, Vocab: 10, Steps: 1, childFlags: []string{"--par-spin", "50µs"}}
	if a := childArgs(o); !slices.Equal(a[len(a)-2:], o.childFlags) {
		t.Errorf("a child's arguments %q lack %q", a, o.childFlags)
	}
}
