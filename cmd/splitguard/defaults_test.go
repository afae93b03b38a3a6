package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/ui"
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
		"splitguard attack features":   {"--run", missing},
		"splitguard sweep":             {missing, "--out", out("sweep")},
		"splitguard plan":              {"--data", table, "--out", out("plan")},
		"splitguard marvell expect":    {"--batches", "5"},
		"splitguard marvell solve":     {},
		"splitguard bench":             {"--steps", "2", "--warmup", "1"},
		"splitguard plan-link":         {"--steps", "2", "--warmup", "1"},
		"splitguard link-proxy":        {"--target", "127.0.0.1:1"},
		"splitguard certs init":        {"--dir", out("certs")},
		"splitguard certs issue":       {"--dir", out("certs"), "--name", "active"},
		"splitguard report":            {missing},
		"splitguard demo":              {"--out", out("demo")},
		"splitguard sweep export":      {"--slurm", missing, "--out", out("export")},
		"splitguard sweep merge":       {missing},
		"splitguard sweep status":      {missing},
		"splitguard deploy k8s": {"--name", "run1", "--active-config", missing, "--passive-config", missing,
			"--image", "splitguard:test", "--out", out("k8s")},
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

// TestProtectionParameterWithoutItsProtection checks, for every parameter
// of every registered gradient protection, that giving it without that
// protection is refused, naming both flags, before any data is read.
func TestProtectionParameterWithoutItsProtection(t *testing.T) {
	n := 0
	for _, spec := range protect.Specs() {
		if spec.Role != protect.GradientRole {
			continue
		}
		for _, par := range spec.Params {
			n++
			v := math.NaN()
			for _, c := range []float64{1, 0.5, 4, par.Min, par.Min + 1, (par.Min + par.Max) / 2} {
				if par.Check(c) == nil {
					v = c
					break
				}
			}
			if math.IsNaN(v) {
				t.Fatalf("no valid value found for %s", par.Key)
			}
			flag := "--" + FlagName(par.Key)
			err := runBounded(t, []string{"train", "--data", filepath.Join(t.TempDir(), "never-read.csv"), "--out", t.TempDir(),
				flag, strconv.FormatFloat(v, 'g', -1, 64)}, time.Minute)
			want := "(" + flag + ") belongs to protection " + spec.Name + ", but the protection (--protect) is none"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s %v without --protect: error %v, want one containing %q", flag, v, err, want)
			}
		}
	}
	if n == 0 {
		t.Fatal("no gradient-protection parameter registered")
	}
}

// ownCSV writes a small table of one's own: numbers with odd cells in the
// first rows, a text column, and yes/no labels.
func ownCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("customer,age,plan,spend,churn\n")
	for i := range 400 {
		age, spend := fmt.Sprint(20+i%40), fmt.Sprintf("%.1f", float64(i%17)*3.5)
		if i == 0 {
			age = "NaN"
		}
		if i == 1 {
			spend = ""
		}
		label := "no"
		if (i*7)%10 < 3 {
			label = "yes"
		}
		fmt.Fprintf(&b, "c%d,%s,%s,%s,%s\n", i, age, []string{"basic", "pro", "max"}[i%3], spend, label)
	}
	p := filepath.Join(t.TempDir(), "own.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOwnTableMessages checks what a new user meets with a table of their
// own: each mistake is refused with a message naming the flag to use.
func TestOwnTableMessages(t *testing.T) {
	own := ownCSV(t)
	for _, c := range []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"csv without --label", []string{"--format", "csv"}, []string{"no label column named (--label)"}, []string{"test-frac", "test fraction"}},
		{"label column misspelt", []string{"--format", "csv", "--label", "churned"}, []string{`label column "churned" (--label) is not in the header, which names "customer", "age", "plan", "spend", "churn"`}, []string{"NoLabel"}},
		{"yes/no labels without --positive", []string{"--format", "csv", "--label", "churn"},
			[]string{`line 2: label "yes" in column "churn" is not 0 or 1`, `holds "no" ×280, "yes" ×120`, "name the positive values (--positive)"}, nil},
		{"csv read as criteo", []string{"--label", "churn", "--positive", "yes"}, []string{"not Criteo's", "format csv (--format)"}, nil},
		{"--layers 0 before the data", []string{"--format", "csv", "--label", "churn", "--layers", "0", "--data", "/nonexistent/file.csv"}, []string{"layer widths [0]", "(--layers)"}, []string{"nonexistent"}},
		{"numeric column declared over text", []string{"--format", "csv", "--label", "churn", "--positive", "yes", "--numeric", "plan"}, []string{`numeric column "plan": "basic" is not a number (declare the column categorical, --categorical`}, nil},
		{"ignored and numeric", []string{"--format", "csv", "--label", "churn", "--positive", "yes", "--numeric", "age", "--ignore", "age"}, []string{`column "age" declared both dense and ignored`}, nil},
	} {
		args := append([]string{"train", "--data", own, "--out", t.TempDir(), "--epochs", "1", "--batch", "32"}, c.args...)
		err := runBounded(t, args, time.Minute)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q, want it to contain %q", c.name, err, w)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q mentions %q", c.name, err, w)
			}
		}
	}
}

// TestOwnTableTrains trains on the table with its label values named, a
// column ignored and a batch (the authors' 1024) larger than the training
// split, which is warned about.
func TestOwnTableTrains(t *testing.T) {
	own := ownCSV(t)
	root := newRootCmd()
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	out := t.TempDir()
	root.SetArgs([]string{"train", "--data", own, "--out", out, "--format", "csv", "--label", "churn", "--positive", "yes",
		"--negative", "no", "--id-col", "customer", "--ignore", "spend", "--epochs", "1", "--batch", "1024", "--model", "mlp"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "batch size 1024 (--batch) exceeds the") {
		t.Errorf("no batch warning in %q", stderr.String())
	}
	enc, err := data.LoadEncoding(filepath.Join(out, "encoding"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range enc.Columns {
		names = append(names, c.Name+":"+c.Kind.String())
	}
	if got := strings.Join(names, ","); got != "age:dense,plan:categorical" {
		t.Errorf("encoded columns %s, want age dense (its NaN is missing) and plan categorical, spend ignored", got)
	}
	cfg, err := os.ReadFile(filepath.Join(out, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"positive: [\"yes\"]", "negative: [\"no\"]", "ignore: [spend]"} {
		if !strings.Contains(strings.ReplaceAll(string(cfg), "'", "\""), w) && !strings.Contains(string(cfg), strings.ReplaceAll(w, "\"", "")) {
			t.Errorf("config.yaml lacks %s:\n%s", w, cfg)
		}
	}
}

// TestFlagSpellings checks --ui ADDR, --ui=ADDR, --ui-addr ADDR and a bare
// --ui, and the older --id beside --id-col.
func TestFlagSpellings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--ui", "127.0.0.1:9"}, "127.0.0.1:9"},
		{[]string{"--ui=127.0.0.1:9"}, "127.0.0.1:9"},
		{[]string{"--ui-addr", "127.0.0.1:9"}, "127.0.0.1:9"},
		{[]string{"--ui"}, ui.DefaultAddr},
		{[]string{"--ui", "--epochs", "2"}, ui.DefaultAddr},
		{nil, ""},
	} {
		var addr string
		cmd := &cobra.Command{Use: "x", Args: uiArgs(&addr), RunE: func(*cobra.Command, []string) error { return nil }}
		addUIFlag(cmd.Flags(), &addr)
		cmd.Flags().Int("epochs", 1, "")
		cmd.SetArgs(c.args)
		if err := cmd.Execute(); err != nil || addr != c.want {
			t.Errorf("%v: address %q, error %v; want %q", c.args, addr, err, c.want)
		}
	}
	var addr string
	cmd := &cobra.Command{Use: "x", Args: uiArgs(&addr), RunE: func(*cobra.Command, []string) error { return nil }}
	addUIFlag(cmd.Flags(), &addr)
	cmd.SetArgs([]string{"stray"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `unexpected argument "stray"`) {
		t.Errorf("a stray argument: error %v", err)
	}
	for _, spelling := range []string{"--id", "--id-col"} {
		tc := newTrainCmd()
		if err := tc.ParseFlags([]string{spelling, "uid"}); err != nil {
			t.Fatal(err)
		}
		if v, _ := tc.Flags().GetString("id-col"); v != "uid" {
			t.Errorf("train %s uid: id-col %q", spelling, v)
		}
	}
	var help bytes.Buffer
	root := newRootCmd()
	root.SetOut(&help)
	root.SetArgs([]string{"train", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, a := range attack.Names() {
		if !strings.Contains(help.String(), a) {
			t.Errorf("train --help does not list the attack %s", a)
		}
	}
}

// TestDemoLeavesNothingBehind runs the demo without --out on a few rows
// and checks that the temporary directory is empty afterwards.
func TestDemoLeavesNothingBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs([]string{"demo", "--rows", "4000"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the demo left %s behind", filepath.Join(tmp, e.Name()))
	}
	if !strings.Contains(out.String(), "splitguard demo --out DIR") {
		t.Errorf("the demo does not say how to keep its runs:\n%s", out.String())
	}
}

// TestPartiesWithRequiredFlagsOnly runs `active` and `passive` together
// with only their required flags (no --cut, the default batch and epochs)
// to the end of the run: with --cut left out the active party once
// panicked (index out of range [-1]) at its first training step.
func TestPartiesWithRequiredFlagsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("two-party run")
	}
	dir := t.TempDir()
	table := filepath.Join(dir, "criteo.tsv")
	var b bytes.Buffer
	if err := data.WriteSynth(&b, 400, 0.3, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(table, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	done := make(chan error, 1)
	go func() {
		done <- runBounded(t, []string{"active", "--data", table, "--out", filepath.Join(dir, "a"), "--addr", addr, "--insecure-loopback"}, 2*time.Minute)
	}()
	perr := runBounded(t, []string{"passive", "--data", table, "--out", filepath.Join(dir, "p"), "--addr", addr, "--insecure-loopback"}, 2*time.Minute)
	aerr := <-done
	if aerr != nil || perr != nil {
		t.Fatalf("active: %v; passive: %v", aerr, perr)
	}
	for _, f := range []string{"a/summary.json", "a/top.model", "p/bottom.model"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
