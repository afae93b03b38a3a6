package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/psi"
)

// coreResult is one child's measurement: its work per second (examples
// per second for a step, IDs per second for the PSI) and the time per unit
// (ms per step, µs per ID).
type coreResult struct {
	PerSecond float64 `json:"per_second"`
	PerUnit   float64 `json:"per_unit"`
	// CPUPerStep is a step bench's processor time per step (ms), 0
	// where the child did not give it.
	CPUPerStep float64 `json:"cpu_per_step,omitempty"`
}

// coreRow is the scaling table's row of one core count: medians over the
// rounds of one process with that many cores (Alone) and of that many
// one-core processes at the same time (Together, their summed rate).
type coreRow struct {
	Cores      int     `json:"cores"`
	PerUnit    float64 `json:"per_unit"`
	PerSecond  float64 `json:"per_second"`
	SpeedUp    float64 `json:"speed_up"`
	Together   float64 `json:"independent_per_second,omitempty"`
	Efficiency float64 `json:"efficiency,omitempty"`
	// CPUPerStep is the median processor time per step (ms, all threads)
	// of the c-core process; CPURatio the median over the rounds of the
	// one-core process's over it: the share of the c cores' processor
	// time that does the one-core step's work (the rest goes to waiting
	// and to slower work). Step benches only.
	CPUPerStep float64 `json:"cpu_ms_per_step,omitempty"`
	CPURatio   float64 `json:"cpu_ratio,omitempty"`
}

// parseCores reads --cores: a comma-separated list of positive counts.
func parseCores(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("--cores %q: %q is not a core count between 1 and 4096", s, f)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// benchCores prints the scaling table: for each core count c of
// o.Cores, the median over o.Rounds interleaved rounds of one child
// process with GOMAXPROCS=c, and, unless c is 1, of c one-core children
// running at the same time, whose summed rate is what c independent
// processes do; the efficiency is the first rate over the second (1: the
// c cores do as much for one run as for c separate runs). Each child is
// this program's `bench` (or `bench --psi`) with --json; the rounds
// interleave the measurements so that a machine's drift spreads over all.
func benchCores(cmd *cobra.Command, o benchOptions) error {
	cores, exe, err := sweepSetup(o)
	if err != nil {
		return err
	}
	args := childArgs(o)
	alone := map[int][]coreResult{}
	together := map[int][]float64{}
	for range o.Rounds {
		for _, c := range cores {
			r, err := runChildren(cmd.Context(), exe, args, c, 1)
			if err != nil {
				return err
			}
			alone[c] = append(alone[c], r[0])
			if c == 1 || o.NoIndependent {
				continue
			}
			rs, err := runChildren(cmd.Context(), exe, args, 1, c)
			if err != nil {
				return err
			}
			sum := 0.0
			for _, x := range rs {
				sum += x.PerSecond
			}
			together[c] = append(together[c], sum)
		}
	}
	rows := scalingRows(cores, alone, together)
	return printScaling(cmd.OutOrStdout(), o, rows)
}

// sweepSetup reads what a sweep of children needs from o: the core
// counts of --cores (this process's GOMAXPROCS when unset), at least one
// round, and this program's path to run them.
func sweepSetup(o benchOptions) (cores []int, exe string, err error) {
	cores = []int{runtime.GOMAXPROCS(0)}
	if o.Cores != "" {
		if cores, err = parseCores(o.Cores); err != nil {
			return nil, "", fmt.Errorf("bench: %w", err)
		}
	}
	if o.Rounds < 1 {
		return nil, "", fmt.Errorf("bench: --rounds %d, want at least 1", o.Rounds)
	}
	if exe, err = os.Executable(); err != nil {
		return nil, "", fmt.Errorf("bench: finding this program to run the children: %w", err)
	}
	return cores, exe, nil
}

// childArgs are the arguments of one measuring child: the same bench
// without --cores, printing JSON.
func childArgs(o benchOptions) []string {
	if o.PSI > 0 {
		return append([]string{"bench", "--psi", strconv.Itoa(o.PSI), "--json"}, o.childFlags...)
	}
	a := []string{"bench", "--model", o.Model, "--batch", strconv.Itoa(o.Batch), "--vocab", strconv.Itoa(o.Vocab),
		"--steps", strconv.Itoa(o.Steps), "--warmup", strconv.Itoa(o.Warmup), "--json"}
	if o.Engine != "" {
		a = append(a, "--engine", o.Engine)
	}
	return append(a, o.childFlags...)
}

// runChildren runs n children at once, each with GOMAXPROCS=procs, and
// returns their results.
func runChildren(ctx context.Context, exe string, args []string, procs, n int) ([]coreResult, error) {
	out := make([]coreResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := exec.CommandContext(ctx, exe, args...)
			c.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			if err := c.Run(); err != nil {
				errs[i] = fmt.Errorf("bench: child %s at GOMAXPROCS=%d: %w\n%s", strings.Join(args, " "), procs, err, stderr.String())
				return
			}
			var m map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &m); err != nil {
				errs[i] = fmt.Errorf("bench: child %s: %w", strings.Join(args, " "), err)
				return
			}
			out[i] = childResult(m)
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// childResult reads a child's JSON: a step bench's or a PSI bench's.
func childResult(m map[string]any) coreResult {
	f := func(k string) float64 { v, _ := m[k].(float64); return v }
	if _, ok := m["us_per_id"]; ok {
		return coreResult{PerSecond: f("ids_per_s"), PerUnit: f("us_per_id")}
	}
	return coreResult{PerSecond: f("examples_per_s"), PerUnit: f("ms_per_step"), CPUPerStep: f("cpu_ms_per_step")}
}

// scalingRows takes the medians of the rounds; the efficiency is the
// median of the rounds' own ratios.
func scalingRows(cores []int, alone map[int][]coreResult, together map[int][]float64) []coreRow {
	var rows []coreRow
	for _, c := range cores {
		var per, unit []float64
		for _, r := range alone[c] {
			per, unit = append(per, r.PerSecond), append(unit, r.PerUnit)
		}
		row := coreRow{Cores: c, PerSecond: median(per), PerUnit: median(unit)}
		row.CPUPerStep, row.CPURatio = cpuColumns(alone[cores[0]], alone[c], cores[0] == 1)
		if t := together[c]; len(t) > 0 {
			// The efficiency pairs each round's c-core process with the
			// one-core processes of the same round, minutes apart from the
			// other rounds: a virtual machine's cores drift between
			// "as fast as two" and "as fast as one" from minute to minute,
			// and a ratio of medians taken in different minutes would
			// mix the two.
			var ratios []float64
			for i, r := range alone[c] {
				if i < len(t) && t[i] > 0 {
					ratios = append(ratios, r.PerSecond/t[i])
				}
			}
			row.Efficiency = median(ratios)
			row.Together = median(t) // sorts t: after the ratios
		}
		if c == 1 {
			row.Together, row.Efficiency = row.PerSecond, 1
		}
		rows = append(rows, row)
	}
	base := rows[0].PerSecond / float64(rows[0].Cores)
	for i := range rows {
		if base > 0 {
			rows[i].SpeedUp = rows[i].PerSecond / base
		}
	}
	return rows
}

// cpuColumns returns the median processor time per step of the rounds
// in these and, when one holds the one-core process's rounds, the median
// of the rounds' ratios of its time to these' (0 where a child gave no
// processor time).
func cpuColumns(one, these []coreResult, oneCore bool) (perStep, ratio float64) {
	var cpu, ratios []float64
	for i, r := range these {
		if r.CPUPerStep <= 0 {
			return 0, 0
		}
		cpu = append(cpu, r.CPUPerStep)
		if oneCore && i < len(one) && one[i].CPUPerStep > 0 {
			ratios = append(ratios, one[i].CPUPerStep/r.CPUPerStep)
		}
	}
	if len(ratios) > 0 {
		ratio = median(ratios)
	}
	return median(cpu), ratio
}

// printScaling prints the table (or JSON).
func printScaling(w io.Writer, o benchOptions, rows []coreRow) error {
	if o.JSON {
		return json.NewEncoder(w).Encode(map[string]any{"rounds": o.Rounds, "rows": rows})
	}
	what, unit, rate := fmt.Sprintf("step of model %s, batch %d", o.Model, o.Batch), "ms/step", "examples/s"
	if o.PSI > 0 {
		what, unit, rate = fmt.Sprintf("streamed PSI of %d IDs a side, half shared, both parties in one process", o.PSI), "µs/ID", "IDs/s"
	}
	fmt.Fprintf(w, "%s; medians of %d interleaved rounds\n", what, o.Rounds)
	fmt.Fprintf(w, "%6s %12s %14s %9s %22s %11s %12s %10s\n", "cores", unit, rate, "speed-up", "independent 1-core ×c", "efficiency", "CPU ms/step", "CPU ratio")
	for _, r := range rows {
		ind, eff, cpu, cr := "—", "—", "—", "—"
		if r.Together > 0 {
			ind, eff = fmt.Sprintf("%.0f", r.Together), fmt.Sprintf("%.2f", r.Efficiency)
		}
		if r.CPUPerStep > 0 {
			cpu = fmt.Sprintf("%.3f", r.CPUPerStep)
		}
		if r.CPURatio > 0 {
			cr = fmt.Sprintf("%.2f", r.CPURatio)
		}
		fmt.Fprintf(w, "%6d %12.3f %14.0f %9.2f %22s %11s %12s %10s\n", r.Cores, r.PerUnit, r.PerSecond, r.SpeedUp, ind, eff, cpu, cr)
	}
	_, err := fmt.Fprintln(w, "speed-up: against the first row's rate per core; efficiency: median over the rounds of one c-core process's rate over c one-core processes' in the same round;\n"+
		"CPU ms/step: the c-core process's processor time per step (all threads); CPU ratio: median over the rounds of the one-core process's over it (1: the c cores spend no processor time beyond the one-core step's work; an upper bound on the efficiency, which also counts idle cores)")
	return err
}

// benchPSI times one streamed PSI (the protocol netrun runs) of n IDs a
// side, half of them shared, both parties in this process, and prints µs
// per input ID (2n IDs in all).
func benchPSI(cmd *cobra.Command, o benchOptions) error {
	n := o.PSI
	x, y := make([]uint64, n), make([]uint64, n)
	for i := range x {
		x[i], y[i] = uint64(i), uint64(i+n/2)
	}
	r, err := psi.NewStreamResponder(y, psi.StreamOptions{})
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer r.Close()
	t0 := time.Now()
	common, err := psi.RunStreamUint64(x, psi.StreamOptions{}, r.Handle)
	if err != nil {
		return fmt.Errorf("bench: PSI: %w", err)
	}
	secs := time.Since(t0).Seconds()
	if len(common) != n-n/2 {
		return fmt.Errorf("bench: PSI found %d common IDs, want %d", len(common), n-n/2)
	}
	us := secs * 1e6 / float64(2*n)
	if o.JSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"us_per_id": us, "ids_per_s": float64(2*n) / secs, "ids": n, "seconds": secs})
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "streamed PSI of %d IDs a side (half shared): %.1f µs per ID, %.2f s\n", n, us, secs)
	return err
}
