package sweep

// The sweep directory's own state, kept under DIR/.sweep so that many
// hosts can share DIR (a shared file system) without a coordinator:
//
//	.sweep/runs.yaml        the sweep's runs (names, datasets, parameters) and fingerprint
//	.sweep/lock             flock(2)ed while results.csv is rebuilt
//	.sweep/claims/RUN       a run being run: host, pid, token; its mtime is the heartbeat
//	.sweep/work/RUN@TOKEN/  the run's directory while it runs; renamed to DIR/RUN when done
//	.sweep/failed/RUN/      the last failed attempt's directory, with error.txt
//	.sweep/trash/           directories set aside before removal
//
// A run is done when DIR/RUN/summary.json exists; DIR/RUN appears whole,
// by one rename, only when its run finished, so a reader (or another
// shard) never sees half a run.

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/atomicfile"
)

// StateDir is the sweep's own directory inside the sweep directory.
const StateDir = ".sweep"

// Run states reported by [ReadState] and written to results.csv.
const (
	StatusRunning = "running" // claimed by a live process
	StatusMissing = "missing" // not done, not running, not failed (never run, or its host died)
)

// Heartbeat defaults: a running run's claim is touched every
// DefaultHeartbeat; a claim untouched for DefaultStaleAfter belongs to a
// dead host and is taken over.
const (
	DefaultHeartbeat  = 20 * time.Second
	DefaultStaleAfter = 2 * time.Minute
)

// RunFile is what the sweep adds to a finished run's directory: where and
// how long it ran.
const RunFile = "sweep.json"

// runRecord is RunFile's content.
type runRecord struct {
	WallS float64 `json:"wall_s"`
	Host  string  `json:"host"`
	Shard string  `json:"shard"`
	End   string  `json:"end"`
}

// claim is a claims/RUN file's content.
type claim struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Token string `json:"token"`
	Shard string `json:"shard"`
	Start string `json:"start"`
}

func stateDir(out string, parts ...string) string {
	return filepath.Join(append([]string{out, StateDir}, parts...)...)
}

// ensureState makes the state directories.
func ensureState(out string) error {
	for _, d := range []string{"claims", "work", "failed", "trash"} {
		if err := os.MkdirAll(stateDir(out, d), 0o755); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	return nil
}

// newToken is a process-unique name for claims and work directories.
func newToken(host string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", sanitize(host), os.Getpid(), hex.EncodeToString(b[:]))
}

// hostname is the host's name, or "unknown".
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

// manifest is runs.yaml: enough to rebuild results.csv without the sweep
// file, and a fingerprint of every run's configuration.
type manifest struct {
	Fingerprint string        `yaml:"fingerprint"`
	Runs        []manifestRun `yaml:"runs"`
}

type manifestRun struct {
	Name    string `yaml:"name"`
	Dataset string `yaml:"dataset,omitempty"`
	Params  []struct {
		Key   string `yaml:"key"`
		Value any    `yaml:"value"`
	} `yaml:"params"`
}

// Fingerprint hashes the runs' names and configurations: two sweep files
// with the same fingerprint run the same runs.
func Fingerprint(runs []RunSpec) (string, error) {
	h := sha256.New()
	for _, r := range runs {
		text, err := ConfigYAML(r.Config, "")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n%s\x00", r.Name, text)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ErrOtherSweep is wrapped by the error of [Run] for a directory that
// holds another sweep (its runs.yaml records other runs).
var ErrOtherSweep = errors.New("it holds another sweep")

// checkManifest refuses, reading only, a directory whose runs.yaml
// records another sweep than runs: a sharded sweep always (its shards
// would disagree on who runs what), a whole sweep unless force (it then
// replaces the record).
func checkManifest(out string, runs []RunSpec, shard Shard, force bool) error {
	fp, err := Fingerprint(runs)
	if err != nil {
		return err
	}
	path := stateDir(out, "runs.yaml")
	old, err := loadManifest(out)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	switch {
	case old.Fingerprint == fp:
		return nil
	case !shard.Whole():
		return fmt.Errorf("sweep: %s holds another sweep (%s differs from this sweep file's runs): shards of one sweep must share one sweep file; to start over, run the sweep once without a shard or give another out", out, path)
	case !force:
		return fmt.Errorf("sweep: %s: %w (%s records other runs than this sweep file's)", out, ErrOtherSweep, path)
	}
	return nil
}

// saveManifest writes runs.yaml (after [checkManifest]).
func saveManifest(out string, runs []RunSpec) error {
	fp, err := Fingerprint(runs)
	if err != nil {
		return err
	}
	path := stateDir(out, "runs.yaml")
	if old, err := loadManifest(out); err == nil && old.Fingerprint == fp {
		return nil
	}
	m := manifest{Fingerprint: fp}
	for _, r := range runs {
		mr := manifestRun{Name: r.Name, Dataset: r.Dataset}
		for _, p := range r.Params {
			mr.Params = append(mr.Params, struct {
				Key   string `yaml:"key"`
				Value any    `yaml:"value"`
			}{p.Key, p.Value})
		}
		m.Runs = append(m.Runs, mr)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("sweep: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

func loadManifest(out string) (*manifest, error) {
	path := stateDir(out, "runs.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("sweep: %s: %w", path, err)
	}
	return &m, nil
}

// LoadRuns reads the runs of the sweep in out (recorded by [Run]), for
// [Merge] and [ReadState] without the sweep file. Their Config is nil.
func LoadRuns(out string) ([]RunSpec, error) {
	m, err := loadManifest(out)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sweep: %s is not a sweep directory (no %s): run 'splitguard sweep' into it first", out, filepath.Join(StateDir, "runs.yaml"))
		}
		return nil, err
	}
	runs := make([]RunSpec, len(m.Runs))
	for i, r := range m.Runs {
		runs[i] = RunSpec{Name: r.Name, Dataset: r.Dataset}
		for _, p := range r.Params {
			runs[i].Params = append(runs[i].Params, Param{p.Key, p.Value})
		}
	}
	return runs, nil
}

// RunState is what the sweep directory says of one run.
type RunState struct {
	Name   string
	Status string // StatusDone, StatusRunning, StatusFailed or StatusMissing
	// Detail: the host and age of a running run's claim, the first line
	// of a failure, or why a missing run is missing (a dead host's claim).
	Detail string
	// Error is a failed run's whole error text.
	Error string
	// WallS is the run's wall time (done or failed runs that recorded it).
	WallS float64
}

// ReadState reads each run's state from out. staleAfter ≤ 0 means
// DefaultStaleAfter.
func ReadState(out string, runs []RunSpec, staleAfter time.Duration) []RunState {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	host := hostname()
	st := make([]RunState, len(runs))
	for i, r := range runs {
		s := RunState{Name: r.Name, Status: StatusMissing}
		if _, err := os.Stat(filepath.Join(out, r.Name, "summary.json")); err == nil {
			s.Status = StatusDone
			var rec runRecord
			if raw, err := os.ReadFile(filepath.Join(out, r.Name, RunFile)); err == nil && json.Unmarshal(raw, &rec) == nil {
				s.WallS = rec.WallS
			}
			st[i] = s
			continue
		}
		if c, age, err := readClaim(out, r.Name); err == nil {
			if live, why := claimLive(c, age, host, staleAfter); live {
				s.Status = StatusRunning
				s.Detail = fmt.Sprintf("on %s (pid %d, shard %s) since %s", c.Host, c.PID, c.Shard, c.Start)
				st[i] = s
				continue
			} else {
				s.Detail = why
			}
		}
		if raw, err := os.ReadFile(stateDir(out, "failed", r.Name, "error.txt")); err == nil {
			s.Status = StatusFailed
			s.Error = strings.TrimSpace(string(raw))
			s.Detail = firstLine(s.Error)
			var rec runRecord
			if raw, err := os.ReadFile(stateDir(out, "failed", r.Name, RunFile)); err == nil && json.Unmarshal(raw, &rec) == nil {
				s.WallS = rec.WallS
			}
		}
		st[i] = s
	}
	return st
}

func readClaim(out, name string) (claim, time.Duration, error) {
	path := stateDir(out, "claims", name)
	var c claim
	fi, err := os.Stat(path)
	if err != nil {
		return c, 0, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return c, 0, err
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		// A claim being written is empty for an instant: young means live.
		c = claim{}
	}
	return c, time.Since(fi.ModTime()), nil
}

// claimLive decides whether a claim's owner is alive: its heartbeat is
// recent and, on this host, its process exists.
func claimLive(c claim, age time.Duration, host string, staleAfter time.Duration) (bool, string) {
	if age > staleAfter {
		return false, fmt.Sprintf("its claim by %s (pid %d) has had no heartbeat for %s", c.Host, c.PID, age.Round(time.Second))
	}
	if c.Host == host && c.PID > 0 && !processAlive(c.PID) {
		return false, fmt.Sprintf("its claim's process %d on this host has ended", c.PID)
	}
	return true, ""
}

// tryClaim claims run name for c. It returns false with the holder's
// description when a live process holds it; a dead holder's claim is
// taken over (and its work directory removed).
func tryClaim(out, name string, c claim, staleAfter time.Duration) (bool, string, error) {
	path := stateDir(out, "claims", name)
	body, _ := json.Marshal(c)
	for attempt := 0; attempt < 3; attempt++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.Write(body)
			cerr := f.Close()
			if err := errors.Join(werr, cerr); err != nil {
				os.Remove(path)
				return false, "", fmt.Errorf("sweep: claiming %s: %w", name, err)
			}
			return true, "", nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return false, "", fmt.Errorf("sweep: claiming %s: %w", name, err)
		}
		old, age, err := readClaim(out, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return false, "", fmt.Errorf("sweep: reading the claim of %s: %w", name, err)
		}
		if live, _ := claimLive(old, age, c.Host, staleAfter); live {
			return false, fmt.Sprintf("%s (pid %d, shard %s)", old.Host, old.PID, old.Shard), nil
		}
		// Take over: set the dead claim aside under a name of our own, so
		// that of two processes taking it over only one succeeds.
		aside := stateDir(out, "trash", "claim-"+name+"@"+c.Token)
		if err := os.Rename(path, aside); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return false, "", fmt.Errorf("sweep: taking over the claim of %s: %w", name, err)
		}
		os.Remove(aside)
		if old.Token != "" {
			os.RemoveAll(stateDir(out, "work", name+"@"+old.Token))
		}
	}
	return false, "another process (the claim changed hands during three attempts)", nil
}

// releaseClaim removes our claim (only if it is still ours).
func releaseClaim(out, name, token string) {
	path := stateDir(out, "claims", name)
	if c, _, err := readClaim(out, name); err == nil && c.Token == token {
		os.Remove(path)
	}
}

// touchClaim is the heartbeat.
func touchClaim(out, name string) {
	now := time.Now()
	_ = os.Chtimes(stateDir(out, "claims", name), now, now)
}

// setAside moves dir to the trash under a unique name and removes it.
func setAside(out, dir, token string) error {
	aside := stateDir(out, "trash", filepath.Base(dir)+"@"+token)
	if err := os.Rename(dir, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	// A finished run moved here by mistake (it was renamed into place
	// between our look and our move) goes back.
	if _, err := os.Stat(filepath.Join(aside, "summary.json")); err == nil {
		if err := os.Rename(aside, dir); err == nil {
			return nil
		}
	}
	return os.RemoveAll(aside)
}
