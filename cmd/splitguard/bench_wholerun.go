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
					w.Seconds, w.Examples, w.Batch, err = wholeRunTrain(cmd.Context(), exe, tmp, o.WholeRun, c, o.childFlags)
					return err
				},
				func() (err error) { w.Bench, err = wholeRunBench(cmd.Context(), exe, o, w.Batch, c); return err },
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
// time, the examples it trained on and its batch.
func wholeRunTrain(ctx context.Context, exe, tmp string, rows, procs int, extra []string) (secs, examples float64, batch int, err error) {
	out, err := os.MkdirTemp(tmp, "run-")
	if err != nil {
		return 0, 0, 0, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(out)
	args := append([]string{"train", "--synth-rows", strconv.Itoa(rows), "--out", out, "--force"}, extra...)
	c := exec.CommandContext(ctx, exe, args...)
	c.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	var stderr bytes.Buffer
	c.Stdout, c.Stderr = io.Discard, &stderr
	t0 := time.Now()
	if err := c.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("bench: child %s at GOMAXPROCS=%d: %w\n%s", strings.Join(args, " "), procs, err, stderr.String())
	}
	secs = time.Since(t0).Seconds()
	var sum struct {
		Examples float64 `json:"examples"`
	}
	if err := decodeJSONFile(filepath.Join(out, rundir.SummaryFile), &sum); err != nil {
		return 0, 0, 0, fmt.Errorf("bench: the whole run's summary: %w", err)
	}
	cfg, err := config.LoadFile(filepath.Join(out, rundir.ConfigFile), config.Default())
	if err != nil || cfg.Batch <= 0 || sum.Examples <= 0 {
		return 0, 0, 0, fmt.Errorf("bench: the whole run's batch (%d) or examples (%g) unreadable: %v", cfg.Batch, sum.Examples, err)
	}
	return secs, sum.Examples, cfg.Batch, nil
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
// per second.
func wholeRunBench(ctx context.Context, exe string, o benchOptions, batch, procs int) (float64, error) {
	o.Batch = batch
	r, err := runChildren(ctx, exe, childArgs(o), procs, 1)
	if err != nil {
		return 0, err
	}
	return r[0].PerSecond, nil
}

// wholeRunRows takes the medians over the rounds of each core count.
func wholeRunRows(cores []int, rounds map[int][]wholeRunRound) []wholeRunRow {
	var rows []wholeRunRow
	for _, c := range cores {
		var secs, run, bench, ratio []float64
		for _, w := range rounds[c] {
			rate := w.Examples / w.Seconds
			secs, run, bench = append(secs, w.Seconds), append(run, rate), append(bench, w.Bench)
			ratio = append(ratio, rate/w.Bench)
		}
		row := wholeRunRow{Cores: c, Seconds: median(secs), RunPerSecond: median(run), Bench: median(bench), Ratio: median(ratio)}
		if len(rounds[c]) > 0 {
			row.Batch = rounds[c][0].Batch
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
	fmt.Fprintf(w, "%6s %6s %10s %16s %16s %7s\n", "cores", "batch", "run s", "run examples/s", "bench examples/s", "ratio")
	for _, r := range rows {
		fmt.Fprintf(w, "%6d %6d %10.2f %16.0f %16.0f %7.2f\n", r.Cores, r.Batch, r.Seconds, r.RunPerSecond, r.Bench, r.Ratio)
	}
	_, err := fmt.Fprintln(w, "run examples/s: the examples trained over the child's whole life (start to exit); ratio: median over the rounds of each round's run rate over its bench rate")
	return err
}
