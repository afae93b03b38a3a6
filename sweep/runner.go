package sweep

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Status of a run.
const (
	StatusDone        = "done"        // summary.json exists
	StatusFailed      = "failed"      // the child exited with an error
	StatusInterrupted = "interrupted" // the sweep was stopped while it ran
	StatusSkipped     = "skipped"     // the sweep was stopped before it started
)

// Outcome is what became of one run.
type Outcome struct {
	Name   string
	Status string
	// Error is the failure and the tail of the child's stderr.
	Error string
	// Seconds is the run's wall time (0 for a run done before).
	Seconds float64
	// Resumed is true for a run whose summary.json existed already.
	Resumed bool
}

// Options control [Run].
type Options struct {
	// Jobs is the number of runs at once (≤ 0: runtime.NumCPU()).
	Jobs int
	// Command builds the child process of a run; nil runs
	// `EXE train --config CONFIG --out DIR` with EXE = os.Executable().
	Command func(ctx context.Context, configPath, runDir string) (*exec.Cmd, error)
	// Validate, when set, checks a run's config.yaml before any run
	// starts (e.g. with run.LoadConfigFile).
	Validate func(configPath string) error
	// Progress receives the progress display (nil: none).
	Progress io.Writer
	// Terminal redraws one progress line instead of printing a line per
	// change.
	Terminal bool
}

// stderrTail is how much of a failed child's stderr is kept.
const stderrTail = 2000

// DefaultCommand runs `EXE train --config CONFIG --out DIR` with this
// executable.
func DefaultCommand(ctx context.Context, configPath, runDir string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sweep: finding the splitguard executable: %w", err)
	}
	return exec.CommandContext(ctx, exe, "train", "--config", configPath, "--out", runDir), nil
}

// complete reports whether the summary at path is that of a finished run:
// it exists, and it is not marked truncated for another reason than
// max_steps (a run a full disk or an error stopped is run again).
func complete(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var s struct {
		Truncated bool   `json:"truncated"`
		Reason    string `json:"truncated_reason"`
	}
	if json.Unmarshal(b, &s) != nil {
		return false
	}
	return !s.Truncated || s.Reason == "" || strings.HasPrefix(s.Reason, "max_steps")
}

// runDir is the directory of the run name under out; an error when it
// would not be a direct child of out (nothing outside out is ever removed).
func runDir(out, name string) (string, error) {
	dir := filepath.Join(out, name)
	if rel, err := filepath.Rel(filepath.Clean(out), dir); err != nil || rel != name || strings.ContainsRune(name, filepath.Separator) {
		return "", fmt.Errorf("sweep: run name %q does not name a directory inside %s", name, out)
	}
	return dir, nil
}

// Run runs every run of runs under out (one directory per run), at most
// opt.Jobs at once. A run whose summary.json exists is not run again; a
// run directory without one (an interrupted or failed run) is removed and
// the run started afresh. Failures are recorded and do not stop the
// others. results.csv is rewritten as runs finish and at the end. The
// error is non-nil only when the sweep itself could not work (or ctx was
// cancelled); failed runs are in the outcomes.
func Run(ctx context.Context, runs []RunSpec, out string, opt Options) ([]Outcome, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if opt.Command == nil {
		opt.Command = DefaultCommand
	}
	jobs := opt.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	outcomes := make([]Outcome, len(runs))
	var todo []int
	for i, r := range runs {
		outcomes[i] = Outcome{Name: r.Name, Status: StatusSkipped}
		dir := filepath.Join(out, r.Name)
		if complete(filepath.Join(dir, "summary.json")) {
			outcomes[i] = Outcome{Name: r.Name, Status: StatusDone, Resumed: true}
			continue
		}
		todo = append(todo, i)
	}
	for _, r := range runs {
		if err := CheckName(r.Name); err != nil {
			return outcomes, fmt.Errorf("sweep: run name: %w", err)
		}
	}
	// Write and check every configuration before starting anything.
	for _, i := range todo {
		dir, err := runDir(out, runs[i].Name)
		if err != nil {
			return outcomes, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return outcomes, fmt.Errorf("sweep: cleaning the unfinished run %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return outcomes, fmt.Errorf("sweep: %w", err)
		}
		text, err := ConfigYAML(runs[i].Config, dir)
		if err != nil {
			return outcomes, err
		}
		cfgPath := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, text, 0o644); err != nil {
			return outcomes, fmt.Errorf("sweep: %w", err)
		}
		if opt.Validate != nil {
			if err := opt.Validate(cfgPath); err != nil {
				return outcomes, fmt.Errorf("sweep: run %s: %w", runs[i].Name, err)
			}
		}
	}

	pr := &progress{w: opt.Progress, terminal: opt.Terminal, total: len(runs)}
	for _, o := range outcomes {
		if o.Resumed {
			pr.done++
		}
	}
	if pr.done > 0 {
		pr.event(fmt.Sprintf("%d runs already done", pr.done))
	} else {
		pr.event("starting")
	}

	var mu sync.Mutex // guards outcomes, pr and results.csv
	var wg sync.WaitGroup
	sem := make(chan struct{}, jobs)
	var csvErr error
loop:
	for _, i := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		if ctx.Err() != nil {
			<-sem
			break
		}
		mu.Lock()
		pr.running++
		pr.event("started " + runs[i].Name)
		mu.Unlock()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			o := runOne(ctx, runs[i], filepath.Join(out, runs[i].Name), opt)
			mu.Lock()
			defer mu.Unlock()
			outcomes[i] = o
			pr.running--
			switch o.Status {
			case StatusDone:
				pr.done++
				pr.event(fmt.Sprintf("done %s (%.1fs)", o.Name, o.Seconds))
			case StatusFailed:
				pr.failed++
				pr.event(fmt.Sprintf("FAILED %s: %s", o.Name, firstLine(o.Error)))
			default:
				pr.event(fmt.Sprintf("%s %s", o.Status, o.Name))
			}
			if err := WriteResults(out, runs, outcomes); err != nil && csvErr == nil {
				csvErr = err
			}
		}(i)
	}
	wg.Wait()
	pr.finish()
	if err := WriteResults(out, runs, outcomes); err != nil {
		return outcomes, err
	}
	if csvErr != nil {
		return outcomes, csvErr
	}
	if err := ctx.Err(); err != nil {
		return outcomes, fmt.Errorf("sweep: stopped: %w (run the same command again to resume)", err)
	}
	return outcomes, nil
}

// runOne runs one child and classifies the result.
func runOne(ctx context.Context, r RunSpec, dir string, opt Options) Outcome {
	o := Outcome{Name: r.Name}
	start := time.Now()
	cfgPath := filepath.Join(dir, "config.yaml")
	cmd, err := opt.Command(ctx, cfgPath, dir)
	if err != nil {
		o.Status, o.Error = StatusFailed, err.Error()
		return o
	}
	logf, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		o.Status, o.Error = StatusFailed, err.Error()
		return o
	}
	defer logf.Close()
	tail := &tailBuffer{max: stderrTail}
	cmd.Stderr = io.MultiWriter(logf, tail)
	cmd.Stdout = logf
	if cmd.Cancel != nil { // made with a context: ask the child to stop, kill it later
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 15 * time.Second
	}
	err = cmd.Run()
	o.Seconds = time.Since(start).Seconds()
	_, serr := os.Stat(filepath.Join(dir, "summary.json"))
	switch {
	case ctx.Err() != nil && err != nil:
		o.Status = StatusInterrupted
	case err != nil:
		o.Status = StatusFailed
		o.Error = strings.TrimSpace(err.Error() + "\n" + tail.String())
	case serr != nil:
		o.Status = StatusFailed
		o.Error = strings.TrimSpace("the run exited without writing summary.json\n" + tail.String())
	default:
		o.Status = StatusDone
	}
	return o
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// progress shows the sweep's state: one line per change, or one redrawn
// line on a terminal.
type progress struct {
	w                            io.Writer
	terminal                     bool
	total, done, running, failed int
	last                         string
}

func (p *progress) event(what string) {
	if p.w == nil {
		return
	}
	state := fmt.Sprintf("sweep: %d/%d done, %d running, %d failed", p.done, p.total, p.running, p.failed)
	if p.terminal {
		line := state + " — " + what
		pad := ""
		if n := len(p.last) - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		p.last = line
		return
	}
	fmt.Fprintf(p.w, "%s — %s\n", state, what)
}

func (p *progress) finish() {
	if p.w != nil && p.terminal {
		fmt.Fprintln(p.w)
	}
}

// WriteResults writes out/results.csv: one row per run with its status,
// error, wall time (wall_s), dataset and parameters (columns cfg.KEY) and every
// figure of its summary.json flattened (leak.norm/cut.q95_abs, …). Runs
// without a summary have empty figure cells.
func WriteResults(out string, runs []RunSpec, outcomes []Outcome) error {
	var paramKeys []string
	seenP := map[string]bool{}
	for _, r := range runs {
		for _, p := range r.Params {
			if !seenP[p.Key] {
				seenP[p.Key] = true
				paramKeys = append(paramKeys, p.Key)
			}
		}
	}
	flat := make([]map[string]string, len(runs))
	seenS := map[string]bool{}
	var notes []string
	for i, r := range runs {
		raw, err := os.ReadFile(filepath.Join(out, r.Name, "summary.json"))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				notes = append(notes, fmt.Sprintf("%s: %v", r.Name, err))
			}
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			notes = append(notes, fmt.Sprintf("%s/summary.json: %v", r.Name, err))
			continue
		}
		flat[i] = map[string]string{}
		flatten("", m, flat[i])
		for k := range flat[i] {
			seenS[k] = true
		}
	}
	sumKeys := make([]string, 0, len(seenS))
	for k := range seenS {
		sumKeys = append(sumKeys, k)
	}
	sort.Slice(sumKeys, func(a, b int) bool {
		la, lb := strings.HasPrefix(sumKeys[a], "leak."), strings.HasPrefix(sumKeys[b], "leak.")
		if la != lb {
			return lb
		}
		return sumKeys[a] < sumKeys[b]
	})
	head := []string{"run", "status", "error", "wall_s", "dataset"}
	for _, k := range paramKeys {
		head = append(head, "cfg."+k)
	}
	head = append(head, sumKeys...)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(head)
	for i, r := range runs {
		o := outcomes[i]
		status, errText := o.Status, o.Error
		if flat[i] != nil && status != StatusFailed {
			status = StatusDone
		}
		row := []string{r.Name, status, errText, "", r.Dataset}
		if o.Seconds > 0 {
			row[3] = fmt.Sprintf("%.1f", o.Seconds)
		}
		pv := map[string]string{}
		for _, p := range r.Params {
			pv[p.Key] = FormatValue(p.Value)
		}
		for _, k := range paramKeys {
			row = append(row, pv[k])
		}
		for _, k := range sumKeys {
			row = append(row, flat[i][k]) // "" for a missing run
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("sweep: results.csv: %w", err)
	}
	path := filepath.Join(out, "results.csv")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if len(notes) > 0 {
		return fmt.Errorf("sweep: results.csv written, but some summaries could not be read: %s", strings.Join(notes, "; "))
	}
	return nil
}

// flatten writes the leaves of v under prefix: maps join keys with ".",
// null becomes "", numbers print in the shortest exact form, lists as JSON.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case nil:
		out[prefix] = ""
	case []any:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	default:
		out[prefix] = FormatValue(x)
	}
}
