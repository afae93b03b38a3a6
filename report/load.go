// Package report turns run directories (config.yaml, batches.jsonl,
// eval.jsonl, summary.json, as written by package rundir;
// docs/RUN-DIRECTORY.md) and sweep
// directories (results.csv plus one sub-directory per run) into figures
// (PNG and SVG, drawn with gonum/plot) and one self-contained HTML page.
//
// It reads the files' formats itself, tolerating nulls and missing files:
// anything it cannot use becomes a visible note in the page, never a crash.
package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/protect"
	"gopkg.in/yaml.v3"
)

// Batch is what the report uses of one line of batches.jsonl.
type Batch struct {
	Step  int64   `json:"step"`
	Epoch int     `json:"epoch"`
	Loss  float64 `json:"loss"`
	// Leak maps "ATTACK/LAYER" to the batch's leak AUC; nil where undefined.
	Leak map[string]*float64 `json:"leak"`
	// Protection holds the protection's per-batch figures (Marvell's
	// sumKL, auc_bound, …); nil values were null in the file.
	Protection map[string]*float64 `json:"protection"`
	ProtectMS  float64             `json:"protect_ms"`
}

// Eval is one line of eval.jsonl.
type Eval struct {
	Step     int64    `json:"step"`
	TestAUC  *float64 `json:"test_auc"`
	TestLoss *float64 `json:"test_loss"`
	ACE      *float64 `json:"ace"`
	// Attacks are the model attacks' figures at this evaluation
	// ("completion/auc", …), when the run had any.
	Attacks map[string]float64 `json:"attacks"`
	// Features are the feature attacks' figures at this evaluation
	// ("inverse_linear/r2_mean", …), when the run had any.
	Features map[string]float64 `json:"features"`
}

// LeakStat is one entry of summary.json's leak map.
type LeakStat struct {
	Q95    *float64 `json:"q95"`
	Q95Abs *float64 `json:"q95_abs"`
	// ChanceQ95Abs is the q95 of |AUC − ½| a label-blind score would give
	// over the same batches (nil in summaries written before it existed).
	ChanceQ95Abs *float64 `json:"chance_q95_abs"`
	Mean         *float64 `json:"mean"`
	Batches      int      `json:"batches"`
	Skipped      int      `json:"skipped"`
}

// Summary is what the report uses of summary.json; Raw holds every field
// as decoded, for the table.
type Summary struct {
	TestAUCBest   *float64            `json:"test_auc_best"`
	TestAUCFinal  *float64            `json:"test_auc_final"`
	TestLossFinal *float64            `json:"test_loss_final"`
	ACEFinal      *float64            `json:"ace_final"`
	Steps         int64               `json:"steps"`
	Seconds       *float64            `json:"seconds"`
	Protect       string              `json:"protect"`
	Leak          map[string]LeakStat `json:"leak"`
	Raw           map[string]any      `json:"-"`
	// Parties are the per-party figures of a run with several passive
	// parties (absent otherwise).
	Parties map[string]PartyStat `json:"parties"`

	// TestAUCSelected is the test AUC of the model selected without
	// looking at the test split (absent in runs made before it existed).
	TestAUCSelected *float64 `json:"test_auc_selected"`
	// TestLossSelected is the selected model's test loss (absent as
	// TestAUCSelected is).
	TestLossSelected *float64 `json:"test_loss_selected"`
}

// MainAUC is the test AUC of the model a user keeps, the main-task
// performance of the trade-off figures, the DCS ranking and the matrix:
// the model selected without looking at the test split
// (TestAUCSelected), or for runs made before selection existed the final
// model, the one they saved. TestAUCBest, the top of the test curve, is
// chosen by looking at the test split.
func (s *Summary) MainAUC() *float64 {
	if s.TestAUCSelected != nil {
		return s.TestAUCSelected
	}
	return s.TestAUCFinal
}

// MainLoss is the test loss of the model MainAUC scores.
func (s *Summary) MainLoss() *float64 {
	if s.TestAUCSelected != nil && s.TestLossSelected != nil {
		return s.TestLossSelected
	}
	return s.TestLossFinal
}

// Run is one run directory as read by [LoadRun].
type Run struct {
	// Dir is the run directory; Name its path relative to the sweep
	// directory (or its base name for a lone run).
	Dir, Name string
	// Config is config.yaml as a map (nil when missing or unreadable).
	Config map[string]any
	// Setting is the protection setting the configuration describes.
	Setting Setting
	// Summary is nil when summary.json is missing or unreadable.
	Summary *Summary
	Batches []Batch
	Evals   []Eval
	// Status is "done", "running" (no summary yet) or "failed: …" (from
	// a sweep's results.csv).
	Status string
	// Notes are the problems met while reading, shown in the page.
	Notes []string
}

// Setting identifies a protection setting: runs that differ only in seed
// share one.
type Setting struct {
	// Dataset names the data ("synth 200000" or the data file's base name).
	Dataset string
	// Method is the protection ("none", "iso", "max_norm", "marvell",
	// "dcor", "label_dp", or a combination such as "marvell+dcor").
	Method string
	// Param is the parameter label ("s=1", "t=9", "α=0.002", "ε=2"), empty
	// for a method without one; Value is the number that orders a method's
	// settings (the main parameter; NaN when there is none).
	Param string
	Value float64
}

// Label is the setting's legend text, e.g. "marvell s=1".
func (s Setting) Label() string {
	if s.Param == "" {
		return s.Method
	}
	return s.Method + " " + s.Param
}

// key orders and groups settings.
func (s Setting) key() string { return s.Dataset + "\x00" + s.Method + "\x00" + s.Param }

// LoadRun reads the run directory dir. Missing or malformed files become
// notes; only an unreadable directory is an error.
func LoadRun(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: run directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: %s is not a directory", dir)
	}
	r := &Run{Dir: dir, Name: filepath.Base(dir), Status: "done"}
	note := func(f string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(f, a...)) }

	if raw, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err != nil {
		note("config.yaml: %v", shortErr(err))
	} else if err := yaml.Unmarshal(raw, &r.Config); err != nil {
		note("config.yaml: %v", err)
		r.Config = nil
	}
	r.Setting = SettingOf(r.Config)

	if raw, err := os.ReadFile(filepath.Join(dir, "summary.json")); err != nil {
		note("summary.json: %v", shortErr(err))
		r.Status = "running"
	} else {
		s := &Summary{}
		if err := json.Unmarshal(raw, s); err != nil {
			note("summary.json: %v", err)
		} else {
			_ = json.Unmarshal(raw, &s.Raw)
			r.Summary = s
			if s.Protect != "" && r.Config == nil {
				r.Setting.Method = s.Protect
			}
		}
	}
	r.Batches, err = readJSONL[Batch](filepath.Join(dir, "batches.jsonl"))
	if err != nil {
		note("%v", err)
	}
	r.Evals, err = readJSONL[Eval](filepath.Join(dir, "eval.jsonl"))
	if err != nil {
		note("%v", err)
	}
	return r, nil
}

// readJSONL decodes every line of path. A malformed line stops the read
// with an error naming the file and line, keeping the lines before it; a
// final line without a newline (a run still writing) is ignored.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Base(path), shortErr(err))
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	var out []T
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a partial last line is still being written
		}
		if err != nil {
			return out, fmt.Errorf("%s line %d: %w", filepath.Base(path), line, err)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return out, fmt.Errorf("%s line %d: %v", filepath.Base(path), line, err)
		}
		out = append(out, v)
	}
}

func shortErr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("missing")
	}
	return err
}

// num reads a number from a config map (YAML gives int or float64).
func num(cfg map[string]any, key string) float64 {
	switch v := cfg[key].(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float64:
		return v
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err == nil {
			return f
		}
	}
	return 0
}

func str(cfg map[string]any, key string) string {
	if v, ok := cfg[key]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// SettingOf derives the protection setting from a run's configuration
// (config.yaml as a map); nil gives an unknown setting.
func SettingOf(cfg map[string]any) Setting {
	if cfg == nil {
		return Setting{Dataset: "?", Method: "?", Value: math.NaN()}
	}
	s := Setting{Value: math.NaN()}
	if d := str(cfg, "data"); d != "" {
		s.Dataset = filepath.Base(d)
	} else if n := num(cfg, "synth_rows"); n > 0 {
		s.Dataset = "synth " + strconv.FormatFloat(n, 'f', -1, 64)
	} else {
		s.Dataset = "?"
	}
	// The legend comes from the defences' registry (package protect), so a
	// protection registered by a plug-in is named like the built-in ones.
	protection := str(cfg, "protect")
	if protection == "" {
		protection = protect.Reference()
	}
	params := protect.Params{}
	for _, par := range protect.AllParams() {
		if v, ok := cfg[par.Key]; ok && v != nil {
			params[par.Key] = num(cfg, par.Key)
		}
	}
	l := protect.Describe(protection, params)
	s.Method, s.Param, s.Value = l.Method, strings.Join(l.Parts, ", "), l.Strength
	if w := wireLabel(cfg); w != "" {
		s.Param = strings.TrimPrefix(s.Param+", "+w, ", ")
	}
	// A cheating party's runs are a setting of their own: the figures of
	// honest runs are not averaged with them.
	if c, honest, dry := cheatLabel(cfg); !honest || dry {
		s.Param = strings.TrimPrefix(s.Param+", "+c, ", ")
	}
	return s
}

// Seed returns the run's seed from its configuration (0 when unknown).
func (r *Run) Seed() uint64 { return uint64(num(r.Config, "seed")) }

// Set is what a report is made of: one run, or the runs of a sweep.
type Set struct {
	// Dir is the directory given to [Load].
	Dir string
	// Sweep is true for a sweep directory.
	Sweep bool
	Runs  []*Run
	// Failed are the sweep's failed runs from results.csv: name → status.
	Failed map[string]string
	// Notes are problems that concern the whole set.
	Notes []string
}

// Load reads dir as a single run directory (it holds config.yaml,
// summary.json or batches.jsonl) or as a sweep directory (results.csv
// and/or sub-directories holding runs, searched two levels deep).
func Load(dir string) (*Set, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: %s is not a directory", dir)
	}
	if isRunDir(dir) {
		r, err := LoadRun(dir)
		if err != nil {
			return nil, err
		}
		return &Set{Dir: dir, Runs: []*Run{r}}, nil
	}
	set := &Set{Dir: dir, Sweep: true, Failed: map[string]string{}}
	var dirs []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Name() == "report" && filepath.Dir(rel) == "." {
			return filepath.SkipDir
		}
		if isRunDir(p) {
			dirs = append(dirs, p)
			return filepath.SkipDir
		}
		if strings.Count(rel, string(filepath.Separator)) >= 1 {
			return filepath.SkipDir // two levels at most
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("report: reading %s: %w", dir, err)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		r, err := LoadRun(d)
		if err != nil {
			set.Notes = append(set.Notes, err.Error())
			continue
		}
		r.Name, _ = filepath.Rel(dir, d)
		set.Runs = append(set.Runs, r)
	}
	readResults(set)
	if len(set.Runs) == 0 {
		return nil, fmt.Errorf("report: %s holds no run directory (config.yaml, summary.json or batches.jsonl) and no runs below it", dir)
	}
	return set, nil
}

func isRunDir(dir string) bool {
	for _, f := range []string{"summary.json", "batches.jsonl", "config.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// readResults takes the status column of a sweep's results.csv, if any,
// so that failed runs show as failed.
func readResults(set *Set) {
	f, err := os.Open(filepath.Join(set.Dir, "results.csv"))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			set.Notes = append(set.Notes, "results.csv: "+err.Error())
		} else {
			set.Notes = append(set.Notes, "results.csv is missing: the table lists the run directories found")
		}
		return
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		set.Notes = append(set.Notes, "results.csv: "+err.Error())
		return
	}
	if len(rows) == 0 {
		return
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	ri, ok1 := col["run"]
	si, ok2 := col["status"]
	if !ok1 || !ok2 {
		return
	}
	ei, hasErr := col["error"]
	byName := map[string]*Run{}
	for _, r := range set.Runs {
		byName[filepath.ToSlash(r.Name)] = r
	}
	for _, row := range rows[1:] {
		if ri >= len(row) || si >= len(row) {
			continue
		}
		name, status := row[ri], row[si]
		if status == "done" {
			continue
		}
		msg := status
		if hasErr && ei < len(row) && row[ei] != "" {
			msg = status + ": " + lastLine(row[ei])
		}
		if r := byName[name]; r != nil {
			r.Status = msg
		} else {
			set.Failed[name] = msg
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
