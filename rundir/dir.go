package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/config"
)

// LockFile is the run directory's lock: the process that writes the
// directory holds an exclusive lock on it ([Lock]) for its life, and its
// process ID is written in it.
const LockFile = ".lock"

// DirLock is a held run-directory lock.
type DirLock struct {
	f *os.File
}

// LockedError is the error of [Lock] when another process (or another
// [Lock] in this process) holds the run directory.
type LockedError struct {
	// Dir is the run directory.
	Dir string
	// PID is the holder's process ID, as its lock file says (0 when the
	// file does not say yet).
	PID int
}

// Error names the directory and the holder's process ID.
func (e *LockedError) Error() string {
	holder := "pid unknown"
	if e.PID > 0 {
		holder = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("run directory %s is in use by another process (%s)", e.Dir, holder)
}

// Lock takes the exclusive lock of the run directory dir (created if
// missing): flock(2) on dir/.lock, which then holds this process's ID. It
// waits for nothing: when the directory is held, it returns a
// *[LockedError] naming the holder and has changed nothing in dir. Take it
// before anything in dir is read, cleaned or written, and hold it until
// the run's last file is written. Where flock is not available (not
// Unix), the lock always succeeds.
func Lock(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if !ok {
		pid := holderPID(f)
		f.Close()
		return nil, &LockedError{Dir: dir, PID: pid}
	}
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// holderPID reads the holder's process ID from its lock file, waiting a
// moment for a holder that has just locked and not yet written it.
func holderPID(f *os.File) int {
	for range 20 {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		if s := strings.TrimSpace(string(b[:n])); s != "" && strings.HasSuffix(string(b[:n]), "\n") {
			pid, _ := strconv.Atoi(s)
			return pid
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0
}

// Unlock releases the lock (the lock file stays). It may be called more
// than once, and on a nil *DirLock.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the file releases its flock
	l.f = nil
	return err
}

// ErrOtherRun is wrapped by the error of [CheckReuse] for a directory that
// holds another run.
var ErrOtherRun = errors.New("it holds another run")

// runFiles are the files a run writes in its directory ([Clear] removes
// them).
var runFiles = []string{ConfigFile, BatchesFile, EvalFile, EpochsFile, SummaryFile, EncodingFile, BottomModelFile, TopModelFile}

// learnedFiles are the files that say, when not empty, that a run made
// progress (config.yaml and the encoding are written again by any start).
var learnedFiles = []string{BatchesFile, EvalFile, EpochsFile, SummaryFile, BottomModelFile, TopModelFile}

// CheckReuse decides, reading only, whether a run may write into dir: yes
// when nothing a run learned is there (no records, summary or models, and
// none of the files in progress, e.g. a party's checkpoints: a start that
// failed early left at most config.yaml and the encoding), or for an
// unfinished run (no summary.json, or one marked truncated for another
// reason than max_steps: an interrupted run, which a restart resumes or
// redoes) whose config.yaml diff finds identical (diff returns the keys
// that differ; [ConfigDiff] compares the training configuration).
// Otherwise it returns an error wrapping [ErrOtherRun]: a finished run, a
// run of another configuration, or a run's files without a config.yaml.
func CheckReuse(dir string, diff func(configPath string) ([]string, error), progress ...string) error {
	paths := slices.Clone(progress)
	for _, name := range learnedFiles {
		paths = append(paths, filepath.Join(dir, name))
	}
	var learned []string
	for _, path := range paths {
		st, err := os.Stat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		if st.Size() > 0 {
			learned = append(learned, filepath.Base(path))
		}
	}
	if len(learned) == 0 {
		return nil
	}
	if slices.Contains(learned, SummaryFile) {
		path := filepath.Join(dir, SummaryFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s Summary
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w: its %s does not read (%v)", dir, ErrOtherRun, SummaryFile, err)
		}
		if !s.Interrupted() {
			return fmt.Errorf("%s: %w, finished (%s)", dir, ErrOtherRun, SummaryFile)
		}
	}
	path := filepath.Join(dir, ConfigFile)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w: it holds %s but no %s", dir, ErrOtherRun, strings.Join(learned, ", "), ConfigFile)
		}
		return err
	}
	keys, err := diff(path)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return fmt.Errorf("%s: %w, of another configuration (%s differs in %s)", dir, ErrOtherRun, ConfigFile, strings.Join(keys, ", "))
	}
	return nil
}

// Interrupted reports whether the summary is that of a run that ended
// before its planned steps for another reason than max_steps (a signal,
// a lost peer, a full disk, a failure): a restart of its configuration
// may resume or redo it.
func (s *Summary) Interrupted() bool {
	return s.Truncated && s.TruncatedReason != "" && !strings.HasPrefix(s.TruncatedReason, "max_steps")
}

// Clear removes the files of a run from dir (config.yaml, the records,
// the summary, the encoding and the models), for a run that replaces
// another one. Other files stay.
func Clear(dir string) error {
	for _, name := range runFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// ConfigDiff returns the keys (as config.yaml names them) in which the
// configuration of the config.yaml at path differs from cur, the
// configuration of a run about to start there (as given, not yet resolved
// for its data). A config.yaml written as given (a sweep's) is read over
// the defaults, as the command line reads it. See [DiffConfigs] for what
// counts as equal.
func ConfigDiff(path string, cur config.Config, ignore ...string) ([]string, error) {
	old, err := config.LoadFile(path, config.Default())
	if err != nil {
		return nil, err
	}
	return DiffConfigs(&old, &cur, &old, &cur, ignore...)
}

// DiffConfigs returns the top-level keys in which two configuration
// structs (config.Config, or one that embeds it) differ: old, read from a
// run directory's config.yaml, and cur, a run about to start there;
// oldRun and curRun are their config.Config. Both are resolved
// (config.Config.Resolve) first; the settings that old lists under auto,
// chosen from its data, count as equal when cur leaves them to the data
// too; out and the keys in ignore are not compared. cur and curRun are
// changed.
func DiffConfigs[T any](old, cur *T, oldRun, curRun *config.Config, ignore ...string) ([]string, error) {
	oldRun.Resolve()
	curRun.Layers = slices.Clone(curRun.Layers)
	curRun.Resolve()
	adoptAuto(oldRun, curRun)
	return yamlDiff(old, cur, append([]string{"out"}, ignore...))
}

// adoptAuto gives cur the values old chose from its data for the settings
// cur leaves to the data too.
func adoptAuto(old, cur *config.Config) {
	for _, k := range old.Auto {
		switch k {
		case "batch":
			if cur.Batch == 0 {
				cur.Batch = old.Batch
			}
		case "epochs":
			if cur.Epochs == 0 {
				cur.Epochs = old.Epochs
			}
		case "lr":
			if cur.LR == 0 {
				cur.LR = old.LR
			}
		case "eval_every":
			if cur.EvalEvery < 0 {
				cur.EvalEvery = old.EvalEvery
			}
		case "early_stop":
			if cur.EarlyStop < 0 {
				cur.EarlyStop = old.EarlyStop
			}
		case "select":
			if cur.Select == "" {
				cur.Select = old.Select
			}
		case "wide_dense":
			if cur.WideDense == "" {
				cur.WideDense = old.WideDense
			}
		case "wide_start":
			if cur.WideStart == "" {
				cur.WideStart = old.WideStart
			}
		case "select_margin":
			if cur.SelectMargin == "" {
				cur.SelectMargin = old.SelectMargin
			}
		}
	}
	if cur.EvalBatch == 0 {
		cur.EvalBatch = old.EvalBatch // the CNN's follows the batch
	}
	cur.Auto, cur.AutoRows = old.Auto, old.AutoRows
}

// yamlDiff returns the top-level YAML keys whose values differ between a
// and b, sorted, leaving out ignore.
func yamlDiff[T any](a, b *T, ignore []string) ([]string, error) {
	var ma, mb map[string]any
	for _, x := range []struct {
		v *T
		m *map[string]any
	}{{a, &ma}, {b, &mb}} {
		raw, err := config.Marshal(x.v)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(raw, x.m); err != nil {
			return nil, err
		}
	}
	var keys []string
	for k, va := range ma {
		if vb, ok := mb[k]; (!ok || !reflect.DeepEqual(va, vb)) && !slices.Contains(ignore, k) {
			keys = append(keys, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok && !slices.Contains(ignore, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Stopped is the cause (context.Cause) with which a command cancels a
// run's context when its process receives a signal: the run ends early,
// writes a summary marked truncated that names the signal, and returns an
// error wrapping it.
type Stopped struct {
	// Signal is the signal's name ("SIGINT", "SIGTERM").
	Signal string
}

// Error says which signal stopped the run.
func (e *Stopped) Error() string { return "stopped by " + e.Signal }

// SignalOf returns the name of the signal that stopped a run whose error
// (or context cause) is err: a *[Stopped] in its chain; "" if none.
func SignalOf(err error) string {
	var s *Stopped
	if errors.As(err, &s) {
		return s.Signal
	}
	return ""
}
