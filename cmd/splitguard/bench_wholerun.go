package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// wholeRunRound is one round's pair at one core count: a whole `train`
// child and a `bench` child of the same batch, run one after the other.
type wholeRunRound struct {
	Seconds  float64 // the train child's wall time, start to exit
	Examples float64 // the examples it trained on (its summary)
	Batch    int     // its resolved batch
	Bench    float64 // the bench child's examples per second
	RunCPU   float64 // the train child's processor time, user and system, seconds
	BenchCPU float64 // the bench child's processor time per step, ms (0: not given)
	// Training is the train child's training phase (its summary's
	// seconds: from the first step to the last, the evaluations and the
	// audit inside it; 0: not given).
	Training float64
}

// wholeRunRow is the table's row of one core count: medians over the
// rounds, the ratio the median of the rounds' own ratios.
type wholeRunRow struct {
	Cores        int     `json:"cores"`
	Seconds      float64 `json:"train_seconds"`
	RunPerSecond float64 `json:"train_examples_per_s"`
	Bench        float64 `json:"bench_examples_per_s"`
	Ratio        float64 `json:"ratio"`
	Batch        int     `json:"batch"`
	// RunCPU and BenchCPU are the processor time per example, µs, of the
	// whole run and of bench's step; CPURatio is the median of the
	// rounds' BenchCPU over RunCPU: the share of the run's processor
	// time that its steps would take, which load moves less than the
	// wall times (0 where a child gave no processor time).
	RunCPU   float64 `json:"train_cpu_us_per_example"`
	BenchCPU float64 `json:"bench_cpu_us_per_example"`
	CPURatio float64 `json:"cpu_ratio"`
	// Where the run's wall time went, medians over the rounds of each
	// round's own split, seconds: Outside the training phase (start-up,
	// loading, set-up, waiting for the baseline, the end); AtBench, the
	// run's examples at bench's rate; Extra, the rest of the training
	// phase (evaluations, the audit, the baseline fitted beside the
	// steps, any slowdown of the steps themselves). Zero where the run
	// gave no training time.
	Outside float64 `json:"outside_seconds"`
	AtBench float64 `json:"steps_at_bench_seconds"`
	Extra   float64 `json:"training_extra_seconds"`
}

// benchWholeRun prints how much of bench's rate a whole default run
// keeps: for each core count c of o.Cores (default: this process's
// GOMAXPROCS) and each of o.Rounds rounds, a child `train --synth-rows
// o.WholeRun` with GOMAXPROCS=c, timed from its start to its exit (loading,
// encoding, the baseline, evaluations, the audit, writing the run
// directory: everything), and a child `bench` of the run's batch with the
// same GOMAXPROCS; the ratio is the run's examples over its wall time
// divided by bench's examples per second. The two children alternate
// which goes first from round to round, so that a machine's drift
// falls on both.
func benchWholeRun(cmd *cobra.Command, o benchOptions) error {
	cores, exe, err := sweepSetup(o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "splitguard-whole-run-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(tmp)
	rounds := map[int][]wholeRunRound{}
	for r := range o.Rounds {
		for _, c := range cores {
			var w wholeRunRound
			steps := []func() error{
				func() (err error) {
					w.Seconds, w.RunCPU, w.Examples, w.Training, w.Batch, err = wholeRunTrain(cmd.Context(), exe, tmp, o.WholeRun, c, o.childFlags)
					return err
				},
				func() (err error) {
					w.Bench, w.BenchCPU, err = wholeRunBench(cmd.Context(), exe, o, w.Batch, c)
					return err
				},
			}
			if r%2 == 1 {
				// bench first: it needs the batch, which the first
				// round's run told (the same configuration every round).
				w.Batch = rounds[c][0].Batch
				steps[0], steps[1] = steps[1], steps[0]
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return err
				}
			}
			rounds[c] = append(rounds[c], w)
		}
	}
	return printWholeRun(cmd.OutOrStdout(), o, wholeRunRows(cores, rounds))
}

// wholeRunTrain runs `train --synth-rows rows` (and the flags extra) as a
// child with GOMAXPROCS=procs into a fresh directory under tmp and returns its wall
// time, its processor time (user and system, seconds), the examples it
// trained on, its training phase's seconds and its batch.
func wholeRunTrain(ctx context.Context, exe, tmp string, rows, procs int, extra []string) (secs, cpu, examples, training float64, batch int, err error) {
	out, err := os.MkdirTemp(tmp, "run-")
	if err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(out)
	args := append([]string{"train", "--synth-rows", strconv.Itoa(rows), "--out", out, "--force"}, extra...)
	c := exec.CommandContext(ctx, exe, args...)
	c.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = io.Discard, &stderr
	t0 := time.Now()
	if err := c.Run(); err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("bench: child %s at GOMAXPROCS=%d: %w\n%s", strings.Join(args, " "), procs, err, stderr.String())
	}
	secs = time.Since(t0).Seconds()
	cpu = (c.ProcessState.UserTime() + c.ProcessState.SystemTime()).Seconds()
	var sum struct {
		Examples float64 `json:"examples"`
		Seconds  float64 `json:"seconds"`
	}
	if err := decodeJSONFile(filepath.Join(out, rundir.SummaryFile), &sum); err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("bench: the whole run's summary: %w", err)
	}
	cfg, err := config.LoadFile(filepath.Join(out, rundir.ConfigFile), config.Default())
	if err != nil || cfg.Batch <= 0 || sum.Examples <= 0 {
		return 0, 0, 0, 0, 0, fmt.Errorf("bench: the whole run's batch (%d) or examples (%g) unreadable: %v", cfg.Batch, sum.Examples, err)
	}
	return secs, cpu, sum.Examples, sum.Seconds, cfg.Batch, nil
}

// decodeJSONFile decodes the JSON file path into v.
func decodeJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// wholeRunBench runs the step bench of o's model and vocabulary at the
// run's batch as a child with GOMAXPROCS=procs and returns its examples
// per second and its processor time per step (ms).
func wholeRunBench(ctx context.Context, exe string, o benchOptions, batch, procs int) (float64, float64, error) {
	o.Batch = batch
	r, err := runChildren(ctx, exe, childArgs(o), procs, 1)
	if err != nil {
		return 0, 0, err
	}
	return r[0].PerSecond, r[0].CPUPerStep, nil
}

// wholeRunRows takes the medians over the rounds of each core count.
func wholeRunRows(cores []int, rounds map[int][]wholeRunRound) []wholeRunRow {
	var rows []wholeRunRow
	for _, c := range cores {
		var secs, run, bench, ratio, runCPU, benchCPU, cpuRatio, outside, atBench, extra []float64
		for _, w := range rounds[c] {
			rate := w.Examples / w.Seconds
			secs, run, bench = append(secs, w.Seconds), append(run, rate), append(bench, w.Bench)
			ratio = append(ratio, rate/w.Bench)
			if w.Training > 0 {
				at := w.Examples / w.Bench
				outside, atBench, extra = append(outside, w.Seconds-w.Training), append(atBench, at), append(extra, w.Training-at)
			}
			if w.RunCPU > 0 && w.BenchCPU > 0 && w.Batch > 0 {
				r, b := w.RunCPU*1e6/w.Examples, w.BenchCPU*1e3/float64(w.Batch)
				runCPU, benchCPU, cpuRatio = append(runCPU, r), append(benchCPU, b), append(cpuRatio, b/r)
			}
		}
		row := wholeRunRow{Cores: c, Seconds: median(secs), RunPerSecond: median(run), Bench: median(bench), Ratio: median(ratio)}
		if len(rounds[c]) > 0 {
			row.Batch = rounds[c][0].Batch
		}
		if len(cpuRatio) == len(rounds[c]) && len(cpuRatio) > 0 {
			row.RunCPU, row.BenchCPU, row.CPURatio = median(runCPU), median(benchCPU), median(cpuRatio)
		}
		if len(outside) == len(rounds[c]) && len(outside) > 0 {
			row.Outside, row.AtBench, row.Extra = median(outside), median(atBench), median(extra)
		}
		rows = append(rows, row)
	}
	return rows
}

// printWholeRun prints the table (or JSON).
func printWholeRun(w io.Writer, o benchOptions, rows []wholeRunRow) error {
	if o.JSON {
		return json.NewEncoder(w).Encode(map[string]any{"rounds": o.Rounds, "synth_rows": o.WholeRun, "rows": rows})
	}
	fmt.Fprintf(w, "whole default run (train --synth-rows %d) against bench of its batch; medians of %d interleaved rounds\n", o.WholeRun, o.Rounds)
	fmt.Fprintf(w, "%6s %6s %10s %16s %16s %7s %13s %15s %9s %10s %13s %9s\n", "cores", "batch", "run s", "run examples/s", "bench examples/s", "ratio",
		"run CPU µs/ex", "bench CPU µs/ex", "CPU ratio", "outside s", "at bench s", "extra s")
	for _, r := range rows {
		fmt.Fprintf(w, "%6d %6d %10.2f %16.0f %16.0f %7.2f %13.2f %15.2f %9.2f %10.2f %13.2f %9.2f\n", r.Cores, r.Batch, r.Seconds, r.RunPerSecond, r.Bench, r.Ratio,
			r.RunCPU, r.BenchCPU, r.CPURatio, r.Outside, r.AtBench, r.Extra)
	}
	_, err := fmt.Fprintln(w, "run examples/s: the examples trained over the child's whole life (start to exit); ratio: median over the rounds of each round's run rate over its bench rate;\n"+
		"CPU µs/ex: processor time per example (all threads, user and system) of the run's whole life and of bench's steps; CPU ratio: median of the rounds' bench over run;\n"+
		"where the run's time went (medians of the rounds' own splits): outside the training phase (start-up, loading, set-up, waiting for the baseline, the end),\n"+
		"at bench: its examples at bench's rate, extra: the rest of the training phase (evaluations, the audit, the baseline fitted beside the steps, slower steps)")
	return err
}
