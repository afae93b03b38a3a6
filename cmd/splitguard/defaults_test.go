package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/data"
)

// TestEveryCommandWithItsRequiredFlagsOnly runs every command of the tree
// with only the flags its usage line requires and checks that it neither
// panics nor fails with a runtime error: it succeeds, stops when its
// deadline passes (the parties wait for a peer), or refuses with a
// message. A command missing from the table fails the test, so a new
// command must be added here.
func TestEveryCommandWithItsRequiredFlagsOnly(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "criteo.tsv")
	var b bytes.Buffer
	if err := data.WriteSynth(&b, 300, 0.3, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(table, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nothing-here")
	out := func(name string) string { return filepath.Join(dir, name) }
	args := map[string][]string{
		"splitguard train":             {"--data", table, "--out", out("train")},
		"splitguard active":            {"--data", table, "--out", out("active"), "--addr", "127.0.0.1:0", "--insecure-loopback"},
		"splitguard active serve":      {"--run", out("active"), "--addr", "127.0.0.1:0", "--insecure-loopback"},
		"splitguard passive":           {"--data", table, "--out", out("passive"), "--addr", "127.0.0.1:1", "--insecure-loopback"},
		"splitguard passive score":     {"--run", out("passive"), "--addr", "127.0.0.1:1", "--insecure-loopback"},
		"splitguard data synth":        {"--rows", "10", "--out", out("synth.tsv")},
		"splitguard data inspect":      {table},
		"splitguard attack multiclass": {"--dump", missing},
		"splitguard sweep":             {missing, "--out", out("sweep")},
		"splitguard marvell expect":    {"--batches", "5"},
		"splitguard marvell solve":     {},
		"splitguard bench":             {"--steps", "2", "--warmup", "1"},
		"splitguard certs init":        {"--dir", out("certs")},
		"splitguard certs issue":       {"--dir", out("certs"), "--name", "active"},
		"splitguard report":            {missing},
		"splitguard demo":              {"--out", out("demo")},
	}
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.Name() != "help" && c.Name() != "completion" {
			paths = append(paths, c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for _, p := range paths {
		a, ok := args[p]
		if !ok {
			t.Errorf("%s: no entry in this test's table of required flags", p)
			continue
		}
		t.Run(strings.TrimPrefix(p, "splitguard "), func(t *testing.T) {
			err := runBounded(t, append(strings.Fields(strings.TrimPrefix(p, "splitguard ")), a...), 4*time.Second)
			if err == nil || errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "context deadline exceeded") {
				return
			}
			if msg := err.Error(); strings.Contains(msg, "runtime error") || strings.Contains(msg, "index out of range") || strings.TrimSpace(msg) == "" {
				t.Errorf("%s: %v", p, err)
			}
		})
	}
}

// runBounded runs the CLI with args and a deadline, turning a panic into
// an error.
func runBounded(t *testing.T, args []string, d time.Duration) (err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v (runtime error)", r)
			t.Errorf("%v panicked: %v", args, r)
		}
	}()
	return root.ExecuteContext(ctx)
}
