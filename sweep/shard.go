package sweep

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Shard is one part of a sweep split across hosts: shard Index of Count
// (0 ≤ Index < Count). The zero value and {0, 1} mean the whole sweep.
type Shard struct {
	Index, Count int
}

// Whole reports whether the shard is the whole sweep.
func (s Shard) Whole() bool { return s.Count <= 1 }

// String prints "I/N".
func (s Shard) String() string {
	if s.Count <= 1 {
		return "0/1"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ParseShard reads "I/N" with 0 ≤ I < N.
func ParseShard(text string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(text), "/")
	if !ok {
		return Shard{}, fmt.Errorf("sweep: shard %q: want I/N, e.g. 0/3 for the first of three", text)
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("sweep: shard %q: I and N must be whole numbers", text)
	}
	return newShard(i, n, "shard "+strconv.Quote(text))
}

func newShard(i, n int, what string) (Shard, error) {
	if n < 1 {
		return Shard{}, fmt.Errorf("sweep: %s: the shard count %d must be at least 1", what, n)
	}
	if i < 0 || i >= n {
		return Shard{}, fmt.Errorf("sweep: %s: the shard index %d must be in 0…%d", what, i, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// Environment variables read by [ShardFromEnv].
const (
	// EnvShardCount gives the shard count where the engine does not (a
	// Kubernetes Indexed Job's completions); the generated manifests set it.
	EnvShardCount = "SPLITGUARD_SHARD_COUNT"
)

// ShardFromEnv finds the shard from a batch engine's environment (getenv
// is os.Getenv in production). A Slurm job array gives
// SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT
// (the index is the task ID less the minimum, so --array=1-3 works too); a
// Kubernetes Indexed Job gives JOB_COMPLETION_INDEX with the count in
// SPLITGUARD_SHARD_COUNT. source names where the shard came from ("" and
// the whole sweep when there is no such environment).
func ShardFromEnv(getenv func(string) string) (s Shard, source string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	num := func(key string) (int, error) {
		v := getenv(key)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, fmt.Errorf("sweep: environment %s=%q is not a whole number", key, v)
		}
		return n, nil
	}
	if getenv("SLURM_ARRAY_TASK_ID") != "" {
		id, err := num("SLURM_ARRAY_TASK_ID")
		if err != nil {
			return Shard{}, "", err
		}
		count, err := num("SLURM_ARRAY_TASK_COUNT")
		if err != nil {
			return Shard{}, "", err
		}
		min := 0
		if getenv("SLURM_ARRAY_TASK_MIN") != "" {
			if min, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
				return Shard{}, "", err
			}
		}
		// A task list with gaps (--array=0,2,5) has no contiguous index.
		if max := getenv("SLURM_ARRAY_TASK_MAX"); max != "" {
			if mx, err := num("SLURM_ARRAY_TASK_MAX"); err == nil && mx-min+1 != count {
				return Shard{}, "", fmt.Errorf("sweep: the Slurm array runs %d tasks between %d and %d: submit a contiguous range such as --array=0-%d", count, min, mx, count-1)
			}
		}
		s, err := newShard(id-min, count, "environment SLURM_ARRAY_TASK_ID")
		return s, "SLURM_ARRAY_TASK_ID", err
	}
	if getenv("JOB_COMPLETION_INDEX") != "" {
		idx, err := num("JOB_COMPLETION_INDEX")
		if err != nil {
			return Shard{}, "", err
		}
		if getenv(EnvShardCount) == "" {
			return Shard{}, "", fmt.Errorf("sweep: environment JOB_COMPLETION_INDEX=%d is set but %s (the Job's completions) is not", idx, EnvShardCount)
		}
		count, err := num(EnvShardCount)
		if err != nil {
			return Shard{}, "", err
		}
		s, err := newShard(idx, count, "environment JOB_COMPLETION_INDEX")
		return s, "JOB_COMPLETION_INDEX", err
	}
	return Shard{Index: 0, Count: 1}, "", nil
}

// defaultRows is the row count assumed for a run on a data file: the
// cost must come from the configuration alone (a file's size may differ,
// or the file be missing, on another host, and every shard must compute
// the same assignment).
const defaultRows = 1_000_000

// Cost estimates a run's relative cost from its configuration alone:
// epochs × rows, the rows being synth_rows, or for a data file one million
// times sample (when 0 < sample < 1). Only ratios matter.
func Cost(r RunSpec) float64 {
	epochs := num(r.Config["epochs"], 1)
	rows := num(r.Config["synth_rows"], 0)
	if rows <= 0 {
		rows = defaultRows
		if s := num(r.Config["sample"], 0); s > 0 && s < 1 {
			rows *= s
		}
	}
	if epochs < 1 {
		epochs = 1
	}
	return epochs * rows
}

func num(v any, def float64) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	return def
}

// Assign gives each run a shard in 0…n-1, balanced by [Cost]: runs are
// taken from the most to the least costly (ties in file order) and each
// goes to the shard with the least cost so far (ties to the lowest
// index). It depends only on the runs, so every shard computes the same
// assignment on its own.
func Assign(runs []RunSpec, n int) []int {
	out := make([]int, len(runs))
	if n <= 1 {
		return out
	}
	order := make([]int, len(runs))
	costs := make([]float64, len(runs))
	for i, r := range runs {
		order[i] = i
		costs[i] = Cost(r)
	}
	sort.SliceStable(order, func(a, b int) bool { return costs[order[a]] > costs[order[b]] })
	load := make([]float64, n)
	for _, i := range order {
		best := 0
		for s := 1; s < n; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		out[i] = best
		load[best] += costs[i]
	}
	return out
}
