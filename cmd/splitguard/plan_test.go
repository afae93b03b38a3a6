package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/netrun"
	"github.com/splitguard/splitguard/plan"
)

// TestPlanCLI plans over toy_scale, the protection plugin_test.go
// registers, on a small synthetic table: the summary names the
// recommendation or the closest settings, and the files are written.
func TestPlanCLI(t *testing.T) {
	out := t.TempDir()
	args := []string{"plan", "--synth-rows", "600", "--layers", "16,16,16", "--batch", "64", "--attacks", "norm",
		"--defences", "toy_scale", "--grid", "2", "--steps", "64", "--max-leak", "0.5", "--budget", "1h", "--out", out}
	stdout, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	for _, want := range []string{"3 of 3 settings tried", "limit: strongest attack's q95 |leak AUC − ½|", "recommended:", "confirmed on 3 seeds", "train --config"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"plan.csv", "confirm.csv", "frontier.svg", "recommended.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "plan.csv"))
	if err != nil || !strings.Contains(string(raw), "toy_scale") {
		t.Errorf("plan.csv lacks toy_scale (err %v):\n%s", err, raw)
	}
	c, err := config.LoadFile(filepath.Join(out, "recommended.yaml"), config.Default())
	if err != nil || c.SynthRows != 600 {
		t.Errorf("recommended.yaml: %v, synth_rows %d", err, c.SynthRows)
	}
	if _, err := netrun.LoadConfigFile(filepath.Join(out, "recommended.yaml"), netrun.Config{Config: config.Default()}); err != nil {
		t.Errorf("recommended.yaml as a party's --config: %v", err)
	}
	// The same command again: nothing left to do, the same answer.
	again, err := runCLI(t, args...)
	if err != nil || !strings.Contains(again, "(3 from an earlier invocation)") {
		t.Errorf("rerun: %v\n%s", err, again)
	}
	// A budget spent at once: the reference alone, and the output says so.
	tiny := append(slices.Clone(args[:len(args)-3]), "1ns", "--out", t.TempDir())
	stdout, err = runCLI(t, tiny...)
	if err != nil || !strings.Contains(stdout, "1 of 3 settings tried") || !strings.Contains(stdout, "the budget (1ns) ended the search") {
		t.Errorf("tiny budget: %v\n%s", err, stdout)
	}
	// No confirmation: no confirm.csv, no confirmation line.
	noConf := append(slices.Clone(args[:len(args)-2]), "--confirm-seeds", "0", "--out", t.TempDir())
	stdout, err = runCLI(t, noConf...)
	if _, serr := os.Stat(filepath.Join(noConf[len(noConf)-1], "confirm.csv")); err != nil || strings.Contains(stdout, "confirmed on") || !os.IsNotExist(serr) {
		t.Errorf("--confirm-seeds 0: %v, confirm.csv %v\n%s", err, serr, stdout)
	}
	// A config file without attacks: the plan's default attacks, not norm alone.
	cfgFile := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfgFile, []byte("synth_rows: 600\nlayers: [16, 16, 16]\nbatch: 64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, err = runCLI(t, "plan", "--config", cfgFile, "--budget", "1ns", "--steps", "20", "--defences", "toy_scale", "--out", t.TempDir())
	if err != nil || !strings.Contains(stdout, "attacks "+strings.Join(plan.DefaultAttacks(), ", ")) {
		t.Errorf("config without attacks: %v\n%s", err, stdout)
	}
	// 20 steps score 20 batches, too few for the leak's bound: nothing
	// meets the limit, and the output says why.
	if !strings.Contains(stdout, "scored 20 batches, fewer than the 59") {
		t.Errorf("20 batches: the output does not say they are too few:\n%s", stdout)
	}
	// A T-DCS floor alone: no leak limit, the floor named, plan.csv's
	// T-DCS column filled.
	tdcsOut := t.TempDir()
	stdout, err = runCLI(t, append(slices.Clone(args[:len(args)-6]), "--min-tdcs", "0.5", "--budget", "1h", "--out", tdcsOut)...)
	if err != nil || !strings.Contains(stdout, "limit: T-DCS ≥ 0.5\n") || !strings.Contains(stdout, "T-DCS 0.") {
		t.Errorf("--min-tdcs: %v\n%s", err, stdout)
	}
	if raw, err := os.ReadFile(filepath.Join(tdcsOut, "plan.csv")); err != nil || !strings.Contains(string(raw), ",tdcs,") {
		t.Errorf("plan.csv with a T-DCS floor: %v\n%s", err, raw)
	}
	// Another limit in the same directory is refused.
	args[len(args)-5] = "0.3"
	if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "max_leak") {
		t.Errorf("another limit: %v", err)
	}
}

func TestPlanCLIBadFlags(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--protect", "marvell"}, "--protect: the plan chooses the defences"},
		{[]string{"--marvell-s", "4"}, "--marvell-s: the plan chooses the defences"},
		{[]string{"--max-leak", "0.7"}, "(--max-leak)"},
		{[]string{"--min-tdcs", "1.5"}, "(--min-tdcs)"},
		{[]string{"--max-leak", "0"}, "no limit"},
		{[]string{"--budget", "0s"}, "(--budget)"},
		{[]string{"--defences", "nope"}, "--defences"},
		{[]string{"--val-frac", "0"}, "--val-frac"},
		{[]string{"--attacks", "completion"}, "test split"},
		{[]string{"--out", ""}, "--out: the plan's directory is required"},
		{[]string{"--budget", "ten"}, `invalid argument "ten" for "--budget"`},
		{[]string{"--confirm-seeds", "-1"}, "--confirm-seeds -1: want 0 (none) or more"},
	} {
		args := append([]string{"plan", "--synth-rows", "300", "--out", out}, c.args...)
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
}
