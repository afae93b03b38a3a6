package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/bench/step"
	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

// benchOptions are the flags of `splitguard bench`.
type benchOptions struct {
	Model  string
	Batch  int
	Vocab  int
	Steps  int
	Warmup int
	JSON   bool
	Engine string
	// Defences times every registered defence instead (benchDefences).
	Defences bool
	// Cores, when set, prints the scaling table over these core counts
	// (benchCores), Rounds times interleaved, with NoIndependent skipping
	// the runs of independent one-core processes.
	Cores         string
	Rounds        int
	NoIndependent bool
	// PSI, when positive, times the streamed PSI of that many IDs a side
	// instead of a training step (benchPSI).
	PSI int
	// WholeRun, when positive, times a whole default `train` on that
	// many synthetic rows against bench at its batch (benchWholeRun).
	WholeRun int
	// childFlags are given to every child process (childFlags).
	childFlags []string
}

// benchModels maps a --model value to a function that builds one training
// step of that model; adding a model (e.g. the CNN) is one entry here.
var benchModels = map[string]func(o benchOptions) (func() error, error){
	"wdl": func(o benchOptions) (func() error, error) {
		spec := step.DefaultSpec()
		spec.Batch, spec.Vocab = o.Batch, o.Vocab
		sb, err := step.NewWDL(spec)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := sb.Step(); return err }, nil
	},
	"cnn": func(o benchOptions) (func() error, error) {
		sb, err := step.NewCNN(model.CNNConfig{}, o.Batch)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := sb.Step(); return err }, nil
	},
}

func benchModelNames() []string {
	names := make([]string, 0, len(benchModels))
	for n := range benchModels {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func newBenchCmd() *cobra.Command {
	o := benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Time training steps of a split model on synthetic data",
		Long: `bench times complete split training steps (passive forward, active forward and
backward, passive backward with the cut gradient, both optimisers) on synthetic
batches and prints the median time per step after a warm-up.

--model wdl is the Criteo-shaped Wide&Deep step: 26 categorical tables of --vocab
rows (ids uniform), 13 dense columns, embeddings of dimension 4, 6×128 layers cut
after the 3rd. --model cnn is the ISIC CNN step (84×84×3 inputs, 6 blocks of 3×3
convolutions with 64 channels, ReLU and 2×2 max-pooling, cut after block 4); use
--batch 128 as in the paper.

--defences times the in-process split run's step (both parties over the in-memory
transport) on synthetic Criteo-shaped rows with every registered defence alone at
its representative setting, and prints its median ms/step, its ratio to no
protection, the one-off setup time (building the models and the defence, e.g.
CAE's autoencoder) and the bytes each way per step as the network transport
encodes the messages (protobuf plus gRPC's 5-byte message header; HTTP/2 and TLS
framing excluded). --model is wdl or mlp there; --vocab does not apply.

--psi N times the ID alignment instead: the streamed PSI that two-process runs use,
of N IDs a side (half shared), both parties in this process, in µs per input ID.

--whole-run N times a whole default run, train --synth-rows N (loading, encoding, the
baseline, evaluations, the audit, writing the run directory: the child process from
start to exit), and bench of the run's batch right before or after it, and prints the
run's examples per second over bench's (the median of the rounds' own ratios); with
--cores, at each core count (GOMAXPROCS of both children).

--cores 1,2,4,… prints how the step (or, with --psi, the PSI) scales with cores: for
each count c, a child process with GOMAXPROCS=c, and c one-core children running at
the same time; the efficiency is the first's rate over the c children's summed rate
in the same round (1.0: c cores do as much for one run as for c separate runs), the
median over the rounds. For the step it also prints the c-core child's processor time
per step and the one-core child's over it (the CPU ratio, paired per round), which
other processes on the machine move far less than wall times. --rounds R repeats the
whole sweep R times, interleaved, and reports medians (machines drift by ±20%
between minutes: use R ≥ 3 for figures you report). Children are this program.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "wdl", "model to time: "+strings.Join(benchModelNames(), ", "))
	f.IntVar(&o.Batch, "batch", 1024, "rows per batch")
	f.IntVar(&o.Vocab, "vocab", 100000, "rows of every categorical table")
	f.IntVar(&o.Steps, "steps", 50, "timed steps (the median is reported)")
	f.IntVar(&o.Warmup, "warmup", 5, "untimed steps first")
	f.StringVar(&o.Engine, "engine", "", "matrix engine to time instead of the default (one of those the error for an unknown name lists)")
	f.BoolVar(&o.Defences, "defences", false, "time the step with every registered defence at its representative setting (ms/step, ratio to none, bytes each way per step)")
	f.BoolVar(&o.JSON, "json", false, `print one JSON object {"ms_per_step":…, "examples_per_s":…, …}`)
	f.StringVar(&o.Cores, "cores", "", "print the scaling table over these core counts (e.g. 1,2,4,8,16)")
	f.IntVar(&o.Rounds, "rounds", 3, "with --cores: interleaved rounds whose medians are reported")
	f.BoolVar(&o.NoIndependent, "no-independent", false, "with --cores: skip the independent one-core processes (no efficiency column)")
	f.IntVar(&o.PSI, "psi", 0, "time the streamed PSI of this many IDs a side instead of a training step")
	f.IntVar(&o.WholeRun, "whole-run", 0, "time a whole default train on this many synthetic rows against bench of its batch, and print the ratio of their examples/s (with --cores: at each core count)")
	return cmd
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	o.childFlags = childFlags(cmd)
	build, ok := benchModels[o.Model]
	if !ok {
		return fmt.Errorf("bench: unknown --model %q (known: %s)", o.Model, strings.Join(benchModelNames(), ", "))
	}
	if o.Batch <= 0 || o.Vocab <= 0 || o.Steps <= 0 || o.Warmup < 0 {
		return fmt.Errorf("bench: --batch %d, --vocab %d and --steps %d must be positive, --warmup %d non-negative", o.Batch, o.Vocab, o.Steps, o.Warmup)
	}
	if o.Engine != "" {
		e, err := tensor.EngineByName(o.Engine)
		if err != nil {
			return fmt.Errorf("bench: --engine: %w", err)
		}
		tensor.Default = e
	}
	if o.PSI != 0 && (o.PSI < 2 || o.Defences) {
		return fmt.Errorf("bench: --psi %d: want at least 2 IDs, and not with --defences", o.PSI)
	}
	if o.WholeRun != 0 {
		if o.WholeRun < 0 || o.PSI != 0 || o.Defences || o.NoIndependent || o.Model != "wdl" {
			return fmt.Errorf("bench: --whole-run %d: want a positive row count, --model wdl (the default run's model), and not --psi, --defences or --no-independent", o.WholeRun)
		}
		return benchWholeRun(cmd, o)
	}
	if o.Cores != "" {
		if o.Defences {
			return errors.New("bench: --cores scales the step or the PSI, not --defences")
		}
		return benchCores(cmd, o)
	}
	if cmd.Flags().Changed("rounds") || o.NoIndependent {
		return errors.New("bench: --rounds and --no-independent only apply with --cores")
	}
	if o.PSI > 0 {
		return benchPSI(cmd, o)
	}
	if o.Defences {
		return benchDefences(cmd, o)
	}
	step, err := build(o)
	if err != nil {
		return fmt.Errorf("bench: building %s: %w", o.Model, err)
	}
	for i := range o.Warmup {
		if err := step(); err != nil {
			return fmt.Errorf("bench: warm-up step %d: %w", i+1, err)
		}
	}
	if par.Measuring() {
		par.Measure(true) // --par-stats: the timed steps only
	}
	cpu0, cpuOK := processTime()
	times := make([]float64, o.Steps)
	for i := range times {
		t0 := time.Now()
		if err := step(); err != nil {
			return fmt.Errorf("bench: step %d: %w", i+1, err)
		}
		times[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
	}
	cpu1, _ := processTime()
	ms := median(times)
	eps := float64(o.Batch) / ms * 1e3
	out := cmd.OutOrStdout()
	if o.JSON {
		res := map[string]any{
			"ms_per_step":    ms,
			"examples_per_s": eps,
			"engine":         tensor.Default.Name(),
			"model":          o.Model,
			"batch":          o.Batch,
			"vocab":          o.Vocab,
			"steps":          o.Steps,
		}
		if cpuOK && o.Steps > 0 {
			res["cpu_ms_per_step"] = cpuPerStep(cpu1-cpu0, o.Steps)
		}
		return json.NewEncoder(out).Encode(res)
	}
	_, err = fmt.Fprintf(out, "model %s, engine %s, batch %d, vocab %d: %.2f ms/step (median of %d), %.0f examples/s\n",
		o.Model, tensor.Default.Name(), o.Batch, o.Vocab, ms, o.Steps, eps)
	if err == nil && cpuOK && o.Steps > 0 {
		_, err = fmt.Fprintf(out, "processor time %.2f ms/step (mean over the %d steps, all threads, user and system)\n", cpuPerStep(cpu1-cpu0, o.Steps), o.Steps)
	}
	return err
}

// median is the median of the step times (sorted in place).
var median = step.Median

// cpuPerStep is the mean processor time of one step, in milliseconds.
func cpuPerStep(cpu time.Duration, steps int) float64 {
	return float64(cpu.Nanoseconds()) / 1e6 / float64(steps)
}

// processTime is the process's processor time so far (bench/step).
var processTime = step.ProcessCPU
