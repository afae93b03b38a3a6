package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = "../.."

// docPage is a Markdown page of the docs: its path from this package,
// its path in the repository and its text.
type docPage struct{ path, rel, text string }

// docPages reads the pages whose commands and links are checked: the
// README, every page under docs/ and the experiments' notes.
func docPages(t *testing.T) []docPage {
	t.Helper()
	paths := []string{filepath.Join(repoRoot, "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/methods/*.md", "experiments/*.md"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 5 {
		t.Fatalf("found only %v: is the test run from cmd/splitguard?", paths)
	}
	pages := make([]docPage, len(paths))
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		pages[i] = docPage{p, rel, string(b)}
	}
	return pages
}

// readme is README.md as a docPage.
func readme(t *testing.T) docPage { return docPages(t)[0] }

func pageCommands(t *testing.T, page docPage) []docCommand {
	t.Helper()
	cmds, err := shellCommands(page.rel, page.text)
	if err != nil {
		t.Fatal(err)
	}
	return cmds
}

// TestREADMEIsShort holds the README to what a newcomer reads in one go;
// the detail lives in docs/.
func TestREADMEIsShort(t *testing.T) {
	if n := strings.Count(readme(t).text, "\n"); n > 200 {
		t.Errorf("README.md has %d lines, more than 200: move detail into a docs/ page", n)
	}
}

// TestREADMETestCommandIsCIs checks that the test command the README gives
// is the one .ci/run runs, word for word.
func TestREADMETestCommandIsCIs(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(repoRoot, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	ciLines := map[string]bool{}
	for _, l := range strings.Split(string(ci), "\n") {
		ciLines[strings.Join(strings.Fields(l), " ")] = true
	}
	n := 0
	for _, c := range pageCommands(t, readme(t)) {
		if len(c.words) >= 2 && c.words[0] == "go" && c.words[1] == "test" {
			n++
			if line := strings.Join(c.words, " "); !ciLines[line] {
				t.Errorf("%s: .ci/run has no line %q: the README's test command must be the one CI runs", c, line)
			}
		}
	}
	if n == 0 {
		t.Error("README.md gives no go test command in a ```sh block")
	}
}

// TestDocCommandsParse checks every splitguard command line of the README,
// the docs/ pages and the experiments' notes against the real command
// tree: the subcommand exists, every flag is one of its flags with a value
// of its type, and it has as many positional arguments as it takes.
// Nothing is executed.
func TestDocCommandsParse(t *testing.T) {
	total := 0
	for _, page := range docPages(t) {
		for _, c := range pageCommands(t, page) {
			args, ok := c.splitguardArgs()
			if !ok {
				continue
			}
			total++
			if err := checkCommandLine(args); err != nil {
				t.Errorf("%s\n\t%v", c, err)
			}
		}
	}
	// The README alone gives more than ten; fewer means the extraction broke.
	if total < 20 {
		t.Errorf("found %d splitguard commands in the docs, expected at least 20", total)
	}
}

// TestCheckCommandLineRefuses makes sure the check above can fail: each
// broken line must be refused.
func TestCheckCommandLineRefuses(t *testing.T) {
	for _, line := range []string{
		"trian --data x --out y",                // no such command
		"train --data x --out y --no-such-flag", // no such flag
		"train --batch many --out y",            // a value of the wrong type
		"data inspect",                          // a missing positional argument
		"data inspect a.csv b.csv",              // one too many
		"certs issue --dir pki --nmae active",   // a misspelt flag of a subcommand
		"--seed 3",                              // no subcommand at all
		"marvell expect --s 1,x",                // a list of the wrong type
	} {
		if err := checkCommandLine(strings.Fields(line)); err == nil {
			t.Errorf("%q: accepted", line)
		}
	}
	for _, line := range []string{
		"train --data x --out y --protect marvell --marvell-s 4",
		"train --ui --out y",
		"data inspect a.csv --format csv --label churn",
		"sweep experiments/quick.yaml --out q --jobs 2",
	} {
		if err := checkCommandLine(strings.Fields(line)); err != nil {
			t.Errorf("%q: refused: %v", line, err)
		}
	}
}

// TestShellCommands checks the extraction of commands from a page against
// hand-written expectations.
func TestShellCommands(t *testing.T) {
	page := "text\n```sh\n" +
		"splitguard train --data d.txt \\\n  --out 'runs/a b' # comment\n" +
		"F=\"--format isic --batch 8\"\n" +
		"splitguard active $F --out r; kubectl apply -f x.yaml && echo \"a \\\"q\\\"\"\n" +
		"GOMAXPROCS=2 go run ./cmd/splitguard demo   # the demo\n" +
		"```\n" +
		"```\nsplitguard train [--synopsis]\n```\n" +
		"```go\nsplitguard fake\n```\n"
	got, err := shellCommands("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	want := []docCommand{
		{"p.md", 3, []string{"splitguard", "train", "--data", "d.txt", "--out", "runs/a b"}},
		{"p.md", 6, []string{"splitguard", "active", "--format", "isic", "--batch", "8", "--out", "r"}},
		{"p.md", 6, []string{"kubectl", "apply", "-f", "x.yaml"}},
		{"p.md", 6, []string{"echo", `a "q"`}},
		{"p.md", 7, []string{"go", "run", "./cmd/splitguard", "demo"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%v\nwant\n%v", fmt.Sprint(got), fmt.Sprint(want))
	}
	if args, ok := got[4].splitguardArgs(); !ok || !slices.Equal(args, []string{"demo"}) {
		t.Errorf("go run ./cmd/splitguard demo: args %q, %v", args, ok)
	}
	if _, err := shellCommands("p.md", "```sh\nsplitguard train\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
	if _, err := shellCommands("p.md", "```sh\necho 'x\n```\n"); err == nil {
		t.Error("an unclosed quote was accepted")
	}
}

// TestDocTranscripts runs every "$ splitguard …" block of the docs and
// compares what it prints with the lines shown below it, exactly: an
// example's output cannot go stale.
func TestDocTranscripts(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		ts, err := transcripts(page.rel, page.text)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range ts {
			n++
			args, _ := tr.splitguardArgs()
			out, err := runCLI(t, args...)
			if err != nil {
				t.Errorf("%s: %v", tr.docCommand, err)
				continue
			}
			if out != tr.output {
				t.Errorf("%s prints\n%s\nthe page shows\n%s", tr.docCommand, out, tr.output)
			}
		}
	}
	if n == 0 {
		t.Error("no $ splitguard transcript found in the docs (docs/CLI.md shows marvell expect's)")
	}
}

// TestDocLinks checks every link of the pages (docPages) that points into
// the repository: the file or folder exists and, for a link
// to a heading (#anchor), the page has that heading.
func TestDocLinks(t *testing.T) {
	n := 0
	for _, page := range docPages(t) {
		for _, link := range localLinks(page.text) {
			n++
			path, anchor, _ := strings.Cut(link, "#")
			target := page.path
			if path != "" {
				target = filepath.Join(filepath.Dir(page.path), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: %v", page.rel, link, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			if !headingAnchors(string(tb))[anchor] {
				t.Errorf("%s: link %s: no heading with anchor #%s in %s", page.rel, link, anchor, path)
			}
		}
	}
	if n < 20 {
		t.Errorf("found %d links in the docs, expected at least 20", n)
	}
}

// TestCLIPageNamesEveryCommand checks that docs/CLI.md, the command
// reference, names every command of the tree.
func TestCLIPageNamesEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.HasParent() && c.Runnable() && !strings.Contains(string(b), "`"+c.CommandPath()+"`") {
			t.Errorf("docs/CLI.md does not name `%s` (%s)", c.CommandPath(), c.Short)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// readmeRunnable are the README's commands that run for real in
// TestREADMECommandsRun, in a scratch directory, in the order the README
// gives them (train capped at a few steps); the others (the two parties,
// sweeps, plans, the demo) are only parsed: process_test.go, plan_test.go
// and the sweep tests run them.
var readmeRunnable = map[string]bool{
	"data synth": true, "data inspect": true, "certs init": true, "certs issue": true,
	"train": true, "report": true, "marvell expect": true, "active": true, "passive": true,
}

// readmeActiveAddr is the address the README's two parties meet at.
const readmeActiveAddr = "127.0.0.1:7443"

// TestREADMECommandsRun runs the README's cheap commands as a newcomer
// would type them, on a small customers.csv, and checks what they leave.
func TestREADMECommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains models")
	}
	cmds := pageCommands(t, readme(t))
	t.Chdir(t.TempDir())
	writeCustomers(t, "customers.csv", 400)
	writeLetters(t, "letter_a.csv", 1500)
	ran := map[string]int{}
	notMade := map[string]bool{}
	partyAddr := freeAddr(t)
	const partiesData = "parties.txt"
	if out, err := runCLI(t, "data", "synth", "--rows", "1500", "--out", partiesData); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	activeDone := make(chan error, 1)
	for _, c := range cmds {
		args, ok := c.splitguardArgs()
		if !ok {
			continue
		}
		root := newRootCmd()
		sub, _, err := root.Find(args)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		path := strings.TrimPrefix(sub.CommandPath(), "splitguard ")
		if !readmeRunnable[path] || slices.ContainsFunc(args, func(a string) bool { return notMade[a] }) {
			// not run, nor what reads its output
			if i := slices.Index(args, "--out"); i >= 0 && i+1 < len(args) {
				notMade[args[i+1]] = true
			}
			continue
		}
		switch path {
		case "train":
			args = append(slices.Clone(args), "--max-steps", "3", "--baseline=false")
		case "active", "passive":
			// the README's port may be taken on a shared machine: both
			// parties get a free one; and a small file, as the private
			// set intersection of 20,000 IDs takes half a minute on a
			// loaded machine
			args = append(slices.Clone(args), "--max-steps", "3")
			for i, a := range args {
				switch {
				case a == readmeActiveAddr:
					args[i] = partyAddr
				case i > 0 && args[i-1] == "--data":
					args[i] = partiesData
				}
			}
		}
		if path == "active" {
			// the active party serves until the passive party ends the run
			go func() {
				out, err := runCLI(t, args...)
				if err != nil {
					err = fmt.Errorf("%s: %v\n%s", c, err, out)
				}
				activeDone <- err
			}()
			ran[path]++
			continue
		}
		if out, err := runCLI(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		if path == "passive" {
			select {
			case err := <-activeDone:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the active party did not end after the passive party's run")
			}
		}
		ran[path]++
	}
	for path := range readmeRunnable {
		if ran[path] == 0 {
			t.Errorf("the README has no %q command any more: update readmeRunnable", path)
		}
	}
	for _, f := range []string{"data.txt", "runs/none/summary.json", "runs/marvell4/summary.json",
		"runs/churn/summary.json", "runs/report/index.html", "pki/ca.crt", "pki/active.crt", "pki/passive.key",
		"run-active/summary.json", "run-active/top.model", "run-passive/bottom.model", "run-passive/redteam.jsonl"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after the README's commands: %v", err)
		}
	}
}

// writeCustomers writes the README's example table: an ID, two numeric
// and one categorical feature, and a yes/no churn label that follows them.
func writeCustomers(t *testing.T, name string, rows int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("customer_id,tenure,spend,plan,churn\n")
	plans := []string{"basic", "plus", "pro"}
	for i := range rows {
		tenure := (i * 7) % 60
		spend := float64((i*13)%100) + 0.5
		churn := "no"
		if tenure < 12 && spend > 30 {
			churn = "yes"
		}
		fmt.Fprintf(&b, "c%04d,%d,%.1f,%s,%s\n", i, tenure, spend, plans[i%3], churn)
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeLetters writes a table shaped as the README's letter-recognition
// example: its sixteen integer features (0 to 15) and a yes/no letter_A
// label that follows two of them.
func writeLetters(t *testing.T, name string, rows int) {
	t.Helper()
	cols := []string{"x.box", "y.box", "width", "high", "onpix", "x.bar", "y.bar", "x2bar",
		"y2bar", "xybar", "x2ybr", "xy2br", "x.ege", "xegvy", "y.ege", "yegvx"}
	var b strings.Builder
	b.WriteString(strings.Join(cols, ",") + ",letter_A\n")
	for i := range rows {
		v := make([]string, len(cols))
		for j := range cols {
			v[j] = strconv.Itoa((i*(j+3) + j*j) % 16)
		}
		label := "no"
		if (i*3)%16 > 10 && (i*6+1)%16 < 8 {
			label = "yes"
		}
		fmt.Fprintf(&b, "%s,%s\n", strings.Join(v, ","), label)
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// foreignFlags are flags the docs give to other programs (bench/paired.py,
// the PyTorch benchmarks, sbatch), not to splitguard.
var foreignFlags = map[string]bool{"--runs": true, "--threads": true, "--a": true, "--b": true, "--requeue": true}

// TestDocFlagsExist checks every --flag the pages name, in prose as in
// commands, against the flags of the whole command tree (hidden spellings
// included), so that a renamed or removed flag cannot linger in the docs.
// A name ending in "-" ("--mid-…") stands for the flags it begins.
func TestDocFlagsExist(t *testing.T) {
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	var usages strings.Builder
	for _, c := range cmds {
		usages.WriteString(c.Flags().FlagUsages())
		usages.WriteString(c.PersistentFlags().FlagUsages())
	}
	exists := func(flag string) bool {
		if flag == "--help" || flag == "--version" {
			return true
		}
		name := strings.TrimPrefix(flag, "--")
		if strings.HasSuffix(name, "-") {
			return strings.Contains(usages.String(), " --"+name)
		}
		for _, c := range cmds {
			if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
				return true
			}
		}
		return false
	}
	flagRE := regexp.MustCompile(`(?:^|[\s\x60(\[|])(--[a-z][a-z0-9-]*)`)
	n := 0
	for _, page := range docPages(t) {
		for i, line := range strings.Split(page.text, "\n") {
			for _, m := range flagRE.FindAllStringSubmatch(line, -1) {
				n++
				if f := m[1]; !foreignFlags[f] && !exists(f) {
					t.Errorf("%s:%d: %s is no flag of any splitguard command", page.rel, i+1, f)
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("found %d flags in the docs, expected hundreds", n)
	}
}
