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
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/atomicfile"
)

// Status of a run.
const (
	StatusDone        = "done"        // summary.json exists
	StatusFailed      = "failed"      // the child exited with an error
	StatusInterrupted = "interrupted" // the sweep was stopped while it ran
	StatusSkipped     = "skipped"     // the sweep was stopped before it started
	StatusElsewhere   = "elsewhere"   // another live process holds the run's claim
	StatusOtherShard  = "other-shard" // the run belongs to another shard
)

// Outcome is what became of one run in this process.
type Outcome struct {
	Name   string
	Status string
	// Error is the failure and the tail of the child's stderr; for a run
	// held elsewhere, its holder.
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
	// Shard selects the runs of this process ([Assign]); zero: all.
	Shard Shard
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
	// Heartbeat is how often a running run's claim is touched, and
	// StaleAfter how old a claim may get before its run is taken over by
	// another process (≤ 0: DefaultHeartbeat, DefaultStaleAfter).
	Heartbeat, StaleAfter time.Duration
	// Force lets a whole sweep replace the record of another sweep in its
	// directory (an error wrapping ErrOtherSweep otherwise, before
	// anything is written); runs of the same name finished there count as
	// done.
	Force bool
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

// Run runs the runs of opt.Shard under out (one directory per run), at
// most opt.Jobs at once. out may be shared by many processes and hosts at
// once (see the layout in state.go): each run is claimed before it starts
// and runs in a work directory of its own, renamed to out/RUN only when it
// finished, so a finished run is never redone and never half visible; a
// run whose claim is held by a live process is left to it; a dead
// process's claim (no heartbeat for opt.StaleAfter, or its process gone on
// this host) is taken over. Failures are recorded under .sweep/failed and
// do not stop the others; a failed run is retried by the next sweep.
// results.csv is rebuilt from the directory, under a lock, as runs finish
// and at the end. The error is non-nil only when the sweep itself could
// not work (or ctx was cancelled); failed runs are in the outcomes.
func Run(ctx context.Context, runs []RunSpec, out string, opt Options) ([]Outcome, error) {
	opt, shard, err := prepare(runs, out, opt)
	if err != nil {
		return nil, err
	}
	host := hostname()
	sw := &sweeping{runs: runs, out: out, opt: opt, shard: shard, host: host, token: newToken(host), held: map[string]bool{}}
	todo, mine := sw.plan()
	// Write and check every configuration before starting anything.
	defer func() {
		for _, i := range todo {
			os.RemoveAll(sw.work(i))
		}
	}()
	if err := sw.writeConfigs(todo); err != nil {
		return sw.outcomes, err
	}

	sw.pr = &progress{w: opt.Progress, terminal: opt.Terminal, total: mine}
	for _, o := range sw.outcomes {
		if o.Resumed {
			sw.pr.done++
		}
	}
	if sw.pr.done > 0 {
		sw.pr.event(fmt.Sprintf("%d runs already done", sw.pr.done))
	} else {
		sw.pr.event("starting")
	}

	stopHeartbeat := sw.heartbeat()
	sw.dispatch(ctx, todo)
	stopHeartbeat()
	sw.pr.finish()
	if err := Merge(out, runs, opt.StaleAfter); err != nil {
		return sw.outcomes, err
	}
	if sw.csvErr != nil {
		return sw.outcomes, sw.csvErr
	}
	if err := ctx.Err(); err != nil {
		return sw.outcomes, fmt.Errorf("sweep: stopped: %w (run the same command again to resume)", err)
	}
	return sw.outcomes, nil
}

// prepare checks the runs' names and the sweep directory out against the
// manifest, creates it with its state, saves the manifest and returns the
// options with their defaults and the shard of this process.
func prepare(runs []RunSpec, out string, opt Options) (Options, Shard, error) {
	for _, r := range runs {
		if err := CheckName(r.Name); err != nil {
			return opt, Shard{}, fmt.Errorf("sweep: run name: %w", err)
		}
	}
	if err := checkManifest(out, runs, opt.Shard, opt.Force); err != nil {
		return opt, Shard{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return opt, Shard{}, fmt.Errorf("sweep: %w", err)
	}
	if err := ensureState(out); err != nil {
		return opt, Shard{}, err
	}
	if opt.Command == nil {
		opt.Command = DefaultCommand
	}
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = DefaultHeartbeat
	}
	if opt.StaleAfter <= 0 {
		opt.StaleAfter = DefaultStaleAfter
	}
	shard := opt.Shard
	if shard.Count <= 1 {
		shard = Shard{Index: 0, Count: 1}
	}
	if err := saveManifest(out, runs); err != nil {
		return opt, Shard{}, err
	}
	if opt.Jobs <= 0 {
		opt.Jobs = runtime.NumCPU()
	}
	return opt, shard, nil
}

// sweeping is the state of one process's part of a sweep.
type sweeping struct {
	runs        []RunSpec
	out         string
	opt         Options
	shard       Shard
	host, token string
	mu          sync.Mutex // guards outcomes, pr, held and csvErr
	outcomes    []Outcome
	pr          *progress
	held        map[string]bool // the runs this process holds (heartbeat)
	csvErr      error
}

// work is the work directory of run i.
func (sw *sweeping) work(i int) string {
	return stateDir(sw.out, "work", sw.runs[i].Name+"@"+sw.token)
}

// plan sets every run's initial outcome (another shard's, already done, or
// skipped until it runs) and returns the runs to do and how many runs are
// this shard's.
func (sw *sweeping) plan() (todo []int, mine int) {
	assign := Assign(sw.runs, sw.shard.Count)
	sw.outcomes = make([]Outcome, len(sw.runs))
	for i, r := range sw.runs {
		if assign[i] != sw.shard.Index {
			sw.outcomes[i] = Outcome{Name: r.Name, Status: StatusOtherShard}
			continue
		}
		mine++
		sw.outcomes[i] = Outcome{Name: r.Name, Status: StatusSkipped}
		if complete(filepath.Join(sw.out, r.Name, "summary.json")) {
			sw.outcomes[i] = Outcome{Name: r.Name, Status: StatusDone, Resumed: true}
			continue
		}
		todo = append(todo, i)
	}
	return todo, mine
}

// writeConfigs writes the configuration of every run to do into its work
// directory and checks it (Options.Validate).
func (sw *sweeping) writeConfigs(todo []int) error {
	for _, i := range todo {
		dir := sw.work(i)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		text, err := ConfigYAML(sw.runs[i].Config, filepath.Join(sw.out, sw.runs[i].Name))
		if err != nil {
			return err
		}
		cfgPath := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, text, 0o644); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		if sw.opt.Validate != nil {
			if err := sw.opt.Validate(cfgPath); err != nil {
				return fmt.Errorf("sweep: run %s: %w", sw.runs[i].Name, err)
			}
		}
	}
	return nil
}

// heartbeat touches the claim of every run this process holds at every
// Options.Heartbeat until the returned stop is called.
func (sw *sweeping) heartbeat() (stop func()) {
	hbDone := make(chan struct{})
	hbStopped := make(chan struct{})
	go func() {
		defer close(hbStopped)
		t := time.NewTicker(sw.opt.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-t.C:
				sw.mu.Lock()
				for name := range sw.held {
					touchClaim(sw.out, name)
				}
				sw.mu.Unlock()
			}
		}
	}()
	return func() {
		close(hbDone)
		<-hbStopped
	}
}

// dispatch claims and runs the runs to do, Options.Jobs at once, until
// they are all done or ctx ends, and waits for those started.
func (sw *sweeping) dispatch(ctx context.Context, todo []int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, sw.opt.Jobs)
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
		r := sw.runs[i]
		c := claim{Host: sw.host, PID: os.Getpid(), Token: sw.token, Shard: sw.shard.String(), Start: time.Now().UTC().Format(time.RFC3339)}
		ok, holder, err := tryClaim(sw.out, r.Name, c, sw.opt.StaleAfter)
		if err != nil || !ok {
			<-sem
			sw.mu.Lock()
			if err != nil {
				sw.outcomes[i] = Outcome{Name: r.Name, Status: StatusFailed, Error: err.Error()}
				sw.pr.failed++
				sw.pr.event(fmt.Sprintf("FAILED %s: %v", r.Name, err))
			} else {
				sw.outcomes[i] = Outcome{Name: r.Name, Status: StatusElsewhere, Error: "running on " + holder}
				sw.pr.event(fmt.Sprintf("%s runs on %s", r.Name, holder))
			}
			sw.mu.Unlock()
			continue
		}
		sw.mu.Lock()
		sw.held[r.Name] = true
		sw.pr.running++
		sw.pr.event("started " + r.Name)
		sw.mu.Unlock()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			sw.finished(i, attempt(ctx, sw.runs[i], sw.out, sw.work(i), sw.token, sw.shard, sw.host, sw.opt))
		}(i)
	}
	wg.Wait()
}

// finished files run i's outcome o: its claim released, the progress
// line, and results.csv merged.
func (sw *sweeping) finished(i int, o Outcome) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	delete(sw.held, sw.runs[i].Name)
	releaseClaim(sw.out, sw.runs[i].Name, sw.token)
	sw.outcomes[i] = o
	sw.pr.running--
	switch o.Status {
	case StatusDone:
		sw.pr.done++
		sw.pr.event(fmt.Sprintf("done %s (%.1fs)", o.Name, o.Seconds))
	case StatusFailed:
		sw.pr.failed++
		sw.pr.event(fmt.Sprintf("FAILED %s: %s", o.Name, firstLine(o.Error)))
	default:
		sw.pr.event(fmt.Sprintf("%s %s", o.Status, o.Name))
	}
	if err := Merge(sw.out, sw.runs, sw.opt.StaleAfter); err != nil && sw.csvErr == nil {
		sw.csvErr = err
	}
}

// attempt runs one claimed run in its work directory and files the
// result: a finished run is renamed into place, a failed one kept under
// .sweep/failed, an interrupted one removed.
func attempt(ctx context.Context, r RunSpec, out, work, token string, shard Shard, host string, opt Options) Outcome {
	final := filepath.Join(out, r.Name)
	if _, err := os.Stat(filepath.Join(final, "summary.json")); err == nil {
		// Finished by another process between our look and our claim.
		return Outcome{Name: r.Name, Status: StatusDone, Resumed: true}
	}
	o := runOne(ctx, r, work, opt)
	rec, _ := json.Marshal(runRecord{WallS: roundTenth(o.Seconds), Host: host, Shard: shard.String(), End: time.Now().UTC().Format(time.RFC3339)})
	switch o.Status {
	case StatusDone:
		if err := finish(out, r.Name, work, token, rec); err != nil {
			o.Status, o.Error = StatusFailed, err.Error()
			recordFailure(out, r.Name, work, token, o.Error, rec)
		}
	case StatusFailed:
		recordFailure(out, r.Name, work, token, o.Error, rec)
	default:
		os.RemoveAll(work)
	}
	return o
}

// finish moves a finished run's work directory to out/NAME: its config's
// out is set to the final place, sweep.json added, any leftover directory
// without a summary set aside, and the directory renamed. If another
// process put a finished run there first, ours is dropped.
func finish(out, name, work, token string, rec []byte) error {
	final := filepath.Join(out, name)
	if err := setConfigOut(filepath.Join(work, "config.yaml"), final); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(work, RunFile), rec, 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if _, err := os.Lstat(final); err == nil {
		if _, err := os.Stat(filepath.Join(final, "summary.json")); err == nil {
			os.RemoveAll(work)
			return nil
		}
		if err := setAside(out, final, token); err != nil {
			return fmt.Errorf("sweep: setting aside the unfinished %s: %w", final, err)
		}
	}
	if err := os.Rename(work, final); err != nil {
		if _, serr := os.Stat(filepath.Join(final, "summary.json")); serr == nil {
			os.RemoveAll(work)
			return nil
		}
		return fmt.Errorf("sweep: moving the finished run into place: %w", err)
	}
	os.RemoveAll(stateDir(out, "failed", name))
	return nil
}

// recordFailure keeps a failed attempt's directory as .sweep/failed/NAME
// (replacing an older failure) with error.txt.
func recordFailure(out, name, work, token, errText string, rec []byte) {
	_ = os.WriteFile(filepath.Join(work, "error.txt"), []byte(errText+"\n"), 0o644)
	_ = os.WriteFile(filepath.Join(work, RunFile), rec, 0o644)
	dst := stateDir(out, "failed", name)
	_ = setAside(out, dst, token)
	if err := os.Rename(work, dst); err != nil {
		os.RemoveAll(work)
	}
}

// setConfigOut sets the out key of a run's config.yaml (the child wrote
// its work directory there) to the run's final directory.
func setConfigOut(path, out string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("sweep: %s: not a mapping", path)
	}
	m := doc.Content[0]
	found := false
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == "out" {
			m.Content[j+1].SetString(out)
			found = true
		}
	}
	if !found {
		return nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, buf.Bytes(), 0o644)
}

func roundTenth(x float64) float64 { return math.Round(x*10) / 10 }

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

// Merge rebuilds out/results.csv from the sweep directory, under the
// directory's lock so that shards finishing at once never lose each
// other's rows: each run's state ([ReadState]) and its summary. runs nil
// means the runs recorded in out ([LoadRuns]).
func Merge(out string, runs []RunSpec, staleAfter time.Duration) error {
	if runs == nil {
		var err error
		if runs, err = LoadRuns(out); err != nil {
			return err
		}
	}
	if err := ensureState(out); err != nil {
		return err
	}
	unlock, err := lockState(out)
	if err != nil {
		return err
	}
	defer unlock()
	return WriteResults(out, runs, ReadState(out, runs, staleAfter))
}

// WriteResults writes out/results.csv: one row per run with its status,
// error, wall time (wall_s), dataset and parameters (columns cfg.KEY) and
// every figure of its summary.json flattened (leak.norm/cut.q95_abs, …).
// Runs without a summary have empty figure cells. Callers that share out
// with other processes use [Merge], which holds the lock.
func WriteResults(out string, runs []RunSpec, states []RunState) error {
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
		if states[i].Status != StatusDone {
			continue
		}
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
		st := states[i]
		row := []string{r.Name, st.Status, st.Error, "", r.Dataset}
		if st.WallS > 0 {
			row[3] = strconv.FormatFloat(st.WallS, 'f', 1, 64)
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
	if err := atomicfile.WriteFile(filepath.Join(out, "results.csv"), buf.Bytes(), 0o644); err != nil {
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
