// Package sweep runs a grid of training runs (datasets × protections ×
// parameters × seeds) as child processes, resumably, and collects every
// run's summary into results.csv.
//
// A sweep file is YAML:
//
//	base: {synth_rows: 200000, epochs: 1, batch: 1024, attacks: [norm, cosine, spectral]}
//	seeds: [1, 2]
//	datasets:                 # optional; each entry's keys go over base
//	  - {name: criteo, data: /data/criteo/train.txt, format: criteo}
//	grid:
//	  - {protect: none}
//	  - {protect: marvell, marvell_s: [0.1, 1, 4]}
//	  - {protect: iso, iso_t: [1, 9]}
//	  - {protect: none, dcor_alpha: [0.002, 0.005]}
//
// base, datasets and grid use the keys of a run's config.yaml (the flags of
// `splitguard train`). In a grid entry a list expands: the entry stands for
// the Cartesian product of its lists (for the list-valued keys attacks and
// layers, a list of lists). Every point is run once per dataset and seed.
package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/configkey"
)

// Spec is a parsed sweep file.
type Spec struct {
	// Base is the configuration every run starts from.
	Base map[string]any `yaml:"base"`
	// Seeds are the seeds every grid point runs with (empty: base's seed).
	Seeds []uint64 `yaml:"seeds"`
	// Datasets each override base (Name names the runs); empty: base alone.
	Datasets []Dataset `yaml:"datasets"`
	// Grid is the list of grid entries, each an ordered mapping.
	Grid []yaml.Node `yaml:"grid"`
	// Resources are what each shard needs on a batch engine (sweep
	// export); they do not change the runs.
	Resources Resources `yaml:"resources"`
}

// Resources of one shard of a sweep on Slurm or Kubernetes. Zero fields
// take the defaults of [Resources.WithDefaults].
type Resources struct {
	// Shards is the number of array tasks (Slurm) or completions
	// (Kubernetes), at most the number of runs.
	Shards int `yaml:"shards"`
	// Jobs is the runs at once inside one shard.
	Jobs int `yaml:"jobs"`
	// CPUs per shard (each run uses up to 2 cores).
	CPUs int `yaml:"cpus"`
	// MemoryMB per shard.
	MemoryMB int `yaml:"memory_mb"`
	// Time is a shard's wall-time limit in minutes.
	TimeMinutes int `yaml:"time_minutes"`
	// Partition is the Slurm partition ("" : the cluster's default).
	Partition string `yaml:"partition"`
	// StorageGB is the size of the Kubernetes volume claim for the sweep
	// directory.
	StorageGB int `yaml:"storage_gb"`
}

// WithDefaults fills zero fields: 4 shards (at most runs), 1 job, 2 CPUs
// per job, 4 GiB per job, 12 hours, 10 GB of storage.
func (r Resources) WithDefaults(runs int) Resources {
	if r.Shards <= 0 {
		r.Shards = 4
	}
	if runs > 0 && r.Shards > runs {
		r.Shards = runs
	}
	if r.Jobs <= 0 {
		r.Jobs = 1
	}
	if r.CPUs <= 0 {
		r.CPUs = 2 * r.Jobs
	}
	if r.MemoryMB <= 0 {
		r.MemoryMB = 4096 * r.Jobs
	}
	if r.TimeMinutes <= 0 {
		r.TimeMinutes = 12 * 60
	}
	if r.StorageGB <= 0 {
		r.StorageGB = 10
	}
	return r
}

// Check reports resources that cannot be right.
func (r Resources) Check() error {
	for _, f := range []struct {
		key string
		v   int
	}{{"shards", r.Shards}, {"jobs", r.Jobs}, {"cpus", r.CPUs}, {"memory_mb", r.MemoryMB}, {"time_minutes", r.TimeMinutes}, {"storage_gb", r.StorageGB}} {
		if f.v < 0 {
			return configkey.Keyed(fmt.Errorf("sweep: key resources.%s is %d, must not be negative", f.key, f.v), "resources."+f.key)
		}
	}
	for _, c := range r.Partition {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == ',') {
			return configkey.Keyed(fmt.Errorf("sweep: key resources.partition %q: only letters, digits, '-', '_' and ','", r.Partition), "resources.partition")
		}
	}
	return nil
}

// Dataset is one entry of a sweep's datasets: a name and config keys.
type Dataset struct {
	Name   string
	Config map[string]any
}

// UnmarshalYAML reads a dataset entry: a mapping with "name" and config keys.
func (d *Dataset) UnmarshalYAML(n *yaml.Node) error {
	var m map[string]any
	if err := n.Decode(&m); err != nil {
		return err
	}
	name, _ := m["name"].(string)
	if name == "" {
		return fmt.Errorf("line %d: a dataset needs a name", n.Line)
	}
	if err := CheckName(name); err != nil {
		return fmt.Errorf("line %d: dataset name: %w", n.Line, err)
	}
	delete(m, "name")
	d.Name, d.Config = name, m
	return nil
}

// CheckName returns an error unless name can be a directory name under
// the sweep directory: not empty, not "." or "..", not starting with a
// dot, and only letters, digits and "-_=.+" (no path separator).
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case name == "." || name == "..":
		return fmt.Errorf("%q names a directory outside the run's own", name)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%q starts with a dot", name)
	case len(name) > 255:
		return fmt.Errorf("%d bytes long (at most 255)", len(name))
	}
	if s := sanitize(name); s != name {
		i := 0
		for i < len(name) && name[i] == s[i] {
			i++
		}
		return fmt.Errorf("%q has the character %q at byte %d; use letters, digits and -_=.+", name, name[i:i+1], i)
	}
	return nil
}

// Param is one parameter of a run: a config key and its value.
type Param struct {
	Key   string
	Value any
}

// RunSpec is one run of a sweep.
type RunSpec struct {
	// Name is the run's directory name under the sweep directory.
	Name string
	// Dataset is the dataset's name ("" without a datasets list).
	Dataset string
	// Params are the grid point's keys in file order, then seed.
	Params []Param
	// Config is the run's whole configuration (base, dataset, grid point,
	// seed), without out.
	Config map[string]any
}

// ConfirmRuns is the largest sweep the command line starts without being
// told to go ahead (--yes); MaxRuns the largest Expand lists at all.
const (
	ConfirmRuns = 1000
	MaxRuns     = 100_000
)

// listKeys are config keys whose value is itself a list.
var listKeys = map[string]bool{"attacks": true, "layers": true}

// LoadSpec reads and checks a sweep file.
func LoadSpec(path string) (*Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return ParseSpec(raw, path)
}

// ParseSpec parses a sweep file's text; name is used in errors.
func ParseSpec(raw []byte, name string) (*Spec, error) {
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sweep %s: empty file", name)
		}
		return nil, fmt.Errorf("sweep %s: %w", name, err)
	}
	if len(s.Grid) == 0 {
		return nil, fmt.Errorf("sweep %s: no grid: give at least one entry, e.g. grid: [{protect: none}]", name)
	}
	if s.Base == nil {
		s.Base = map[string]any{}
	}
	if _, ok := s.Base["out"]; ok {
		// Not keyed: out is also the sweep's own output directory, which
		// a caller would name in its place.
		return nil, fmt.Errorf("sweep %s: base sets out: the sweep decides each run's directory, one per run under the sweep's own", name)
	}
	if err := s.Resources.Check(); err != nil {
		return nil, fmt.Errorf("sweep %s: %w", name, err)
	}
	seen := map[string]bool{}
	for _, d := range s.Datasets {
		if seen[d.Name] {
			return nil, fmt.Errorf("sweep %s: dataset %q given twice", name, d.Name)
		}
		seen[d.Name] = true
	}
	return &s, nil
}

// Expand lists the runs of the sweep: datasets × grid points × seeds, in
// file order. Names are unique; an error names the grid entry at fault.
func (s *Spec) Expand() ([]RunSpec, error) {
	var points [][]Param
	for i := range s.Grid {
		n := &s.Grid[i]
		if n.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("sweep: grid entry %d (line %d): want a mapping such as {protect: iso, iso_t: [1, 9]}", i+1, n.Line)
		}
		var keys []string
		var choices [][]any
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := n.Content[j].Value
			if k == "out" || k == "seed" {
				return nil, fmt.Errorf("sweep: grid entry %d (line %d): %s is set by the sweep (use seeds: for seeds)", i+1, n.Line, k)
			}
			var v any
			if err := n.Content[j+1].Decode(&v); err != nil {
				return nil, configkey.Keyed(fmt.Errorf("sweep: grid entry %d key %s: %w", i+1, k, err), k)
			}
			vals := []any{v}
			if l, ok := v.([]any); ok && (!listKeys[k] || len(l) > 0 && isList(l[0])) {
				if len(l) == 0 {
					return nil, configkey.Keyed(fmt.Errorf("sweep: grid entry %d (line %d): key %s is an empty list", i+1, n.Line, k), k)
				}
				vals = l
			}
			for _, v := range vals {
				if v == nil || v == "" {
					return nil, configkey.Keyed(fmt.Errorf("sweep: grid entry %d (line %d): key %s has no value; give one, e.g. {protect: iso, iso_t: [1, 9]}", i+1, n.Line, k), k)
				}
			}
			keys = append(keys, k)
			choices = append(choices, vals)
		}
		// Refuse a grid too large to list before listing it.
		count := int64(1)
		for _, c := range choices {
			count *= int64(len(c))
			if count > MaxRuns {
				break
			}
		}
		if total := (int64(len(points)) + count) * int64(max(len(s.Datasets), 1)) * int64(max(len(s.Seeds), 1)); count > MaxRuns || total > MaxRuns {
			return nil, fmt.Errorf("sweep: grid entry %d (line %d) makes the sweep more than %d runs; split it into smaller sweeps", i+1, n.Line, MaxRuns)
		}
		// Cartesian product, first key outermost.
		idx := make([]int, len(keys))
		for {
			pt := make([]Param, len(keys))
			for j, k := range keys {
				pt[j] = Param{k, choices[j][idx[j]]}
			}
			points = append(points, pt)
			j := len(keys) - 1
			for ; j >= 0; j-- {
				idx[j]++
				if idx[j] < len(choices[j]) {
					break
				}
				idx[j] = 0
			}
			if j < 0 {
				break
			}
		}
	}
	datasets := s.Datasets
	if len(datasets) == 0 {
		datasets = []Dataset{{}}
	}
	seeds := s.Seeds
	var runs []RunSpec
	names := map[string]int{}
	for _, d := range datasets {
		for _, pt := range points {
			ss := seeds
			if len(ss) == 0 {
				ss = []uint64{0}
			}
			for _, seed := range ss {
				cfg := map[string]any{}
				for k, v := range s.Base {
					cfg[k] = v
				}
				for k, v := range d.Config {
					cfg[k] = v
				}
				params := append([]Param(nil), pt...)
				for _, p := range pt {
					cfg[p.Key] = p.Value
				}
				if len(seeds) > 0 {
					cfg["seed"] = seed
					params = append(params, Param{"seed", seed})
				}
				name := runName(d.Name, params)
				if c := names[name]; c > 0 {
					return nil, fmt.Errorf("sweep: two grid points give the same run %q: remove the duplicate", name)
				}
				names[name]++
				runs = append(runs, RunSpec{Name: name, Dataset: d.Name, Params: params, Config: cfg})
			}
		}
	}
	return runs, nil
}

func isList(v any) bool { _, ok := v.([]any); return ok }

// FormatValue prints a parameter value for names and CSV cells.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = FormatValue(e)
		}
		return strings.Join(parts, "+")
	default:
		return fmt.Sprint(x)
	}
}

// runName builds a directory name such as "marvell-marvell_s=1-seed=2":
// the protect value first, then the other parameters in file order.
func runName(dataset string, params []Param) string {
	var parts []string
	if dataset != "" {
		parts = append(parts, dataset)
	}
	for _, p := range params {
		if p.Key == "protect" {
			parts = append(parts, FormatValue(p.Value))
		}
	}
	for _, p := range params {
		if p.Key != "protect" {
			parts = append(parts, p.Key+"="+FormatValue(p.Value))
		}
	}
	if len(parts) == 0 {
		parts = []string{"run"}
	}
	return sanitize(strings.Join(parts, "-"))
}

func sanitize(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i == 0 && r == '.' { // never ".", ".." or a hidden name
			b.WriteByte('_')
			continue
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_=.+", r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ConfigYAML renders a run's configuration with out set, keys sorted.
func ConfigYAML(cfg map[string]any, out string) ([]byte, error) {
	m := make(map[string]any, len(cfg)+1)
	for k, v := range cfg {
		m[k] = v
	}
	m["out"] = out
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("sweep: config for %s: %w", out, err)
	}
	return buf.Bytes(), nil
}
