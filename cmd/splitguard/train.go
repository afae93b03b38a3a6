package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport/wire"
	"github.com/splitguard/splitguard/ui"
)

func init() { subcommands = append(subcommands, newTrainCmd) }

// trainFlags binds the flags of `train` to a config.Config. Every flag has a
// config-file key of the same name with dashes as underscores.
func trainFlags(fs *pflag.FlagSet, c *config.Config) {
	fs.StringVar(&c.Data, "data", c.Data, "training data: a table file, or the image folder of "+imageSets())
	fs.IntVar(&c.SynthRows, "synth-rows", c.SynthRows, "without --data: train on N rows of in-memory synthetic Criteo-shaped data")
	fs.Float64Var(&c.SynthPosRate, "synth-pos-rate", c.SynthPosRate, "positive rate of --synth-rows data")
	fs.StringVar(&c.Format, "format", c.Format, "data format: "+strings.Join(data.TableFormats(), ", ")+" (tables); "+strings.Join(data.ImageFormats(), ", ")+" (images)")
	tableFlags(fs, c)
	fs.Float64Var(&c.Sample, "sample", c.Sample, "fraction of the rows to use (seeded)")
	fs.Float64Var(&c.TestFrac, "test-frac", c.TestFrac, "fraction of the used rows held out for testing, seeded (0: 0.1 for tables, 0.2 for isic; fashion-mnist has its own test files)")
	fs.IntVar(&c.HashBuckets, "hash-buckets", c.HashBuckets, "hash categories into N buckets instead of building vocabularies (one pass)")
	fs.BoolVar(&c.SkipBadRows, "skip-bad-rows", c.SkipBadRows, "skip and count malformed rows instead of stopping")
	fs.IntVar(&c.PositiveClass, "positive-class", c.PositiveClass, "fashion-mnist: the class (0…9) labelled positive")
	fs.Float64Var(&c.PosRate, "pos-rate", c.PosRate, "fashion-mnist: subsample positives to this share of each split (0: natural, 10%)")
	fs.IntVar(&c.NegPerPos, "neg-per-pos", c.NegPerPos, "isic: benign images kept per malignant one (0: 9; negative: all)")
	fs.IntVar(&c.ImageSize, "image-size", c.ImageSize, "images: side of the square model input, resized with a cubic kernel (0: 28 fashion-mnist, 84 isic)")
	fs.BoolVar(&c.ImagePad, "image-pad", c.ImagePad, "fashion-mnist: centre the 28×28 images on a black --image-size canvas instead of resizing")
	fs.IntVar(&c.ImageChannels, "image-channels", c.ImageChannels, "images: 1 (grey) or 3 (RGB) channels (0: 1 fashion-mnist, 3 isic)")
	fs.StringVar(&c.Model, "model", c.Model, "model: wdl (Wide&Deep) or mlp for tables, cnn for images")
	fs.IntSliceVar(&c.Layers, "layers", c.Layers, "wdl/mlp: widths of the deep part's ReLU layers")
	fs.IntVar(&c.Cut, "cut", c.Cut, "the passive party's layers: wdl/mlp deep layers (0: 3), cnn convolutional blocks (0: min(4, --cnn-blocks))")
	fs.IntVar(&c.EmbedDim, "embed-dim", c.EmbedDim, "wdl/mlp: deep embedding dimension")
	fs.IntVar(&c.CNNBlocks, "cnn-blocks", c.CNNBlocks, "cnn: [conv, ReLU, maxpool 2×2] blocks, each halving the image side (0: 6)")
	fs.IntVar(&c.CNNChannels, "cnn-channels", c.CNNChannels, "cnn: filters of every convolution (0: 64)")
	fs.IntVar(&c.CNNKernel, "cnn-kernel", c.CNNKernel, "cnn: convolution kernel side K, 'same' padding (0: 3)")
	fs.IntVar(&c.CNNDense, "cnn-dense", c.CNNDense, "cnn: width of the Dense+ReLU layer before the logit (0: 64)")
	fs.IntVar(&c.Epochs, "epochs", c.Epochs, "training epochs (0: chosen from the training rows, see docs/CLI.md)")
	fs.IntVar(&c.Batch, "batch", c.Batch, "batch size (0: chosen from the training rows, see docs/CLI.md)")
	fs.Float64Var(&c.LR, "lr", c.LR, "Adam learning rate (0: chosen from the training rows for wdl/mlp, see docs/CLI.md; 1e-5 for cnn)")
	fs.Float64Var(&c.L2, "l2", c.L2, "wdl/mlp: L2 regularisation of the embedding rows a batch touches")
	fs.StringVar(&c.WideDense, "wide-dense", c.WideDense, "wdl: the wide part reads the numeric columns standardised or minmax (default: standardised when --lr is chosen from the data, else minmax as the authors' model)")
	fs.StringVar(&c.WideStart, "wide-start", c.WideStart, "wdl: the wide part starts at the logistic baseline (baseline: its weights and L2, the deep logit at zero) or at random (default: baseline below 50,000 training rows when --lr is chosen from the data, one passive party in process; else random as the authors' model)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed (data split, initialisation, schedule, noise)")
	fs.Uint64Var(&c.SplitSeed, "split-seed", c.SplitSeed, "seed of the data alone (sampling, test split, synthetic rows), so that runs differing in --seed share one test split (0: --seed)")
	fs.IntVar(&c.EvalEvery, "eval-every", c.EvalEvery, "evaluate on the validation and test splits every N batches (0: at the end only; -1: chosen from the training rows)")
	fs.Float64Var(&c.ValFrac, "val-frac", c.ValFrac, "fraction of the training rows held out for validation, by a keyed hash of the ID (0: none)")
	fs.StringVar(&c.Select, "select", c.Select, "model kept and reported: best (best validation AUC) or last (default: best with a validation split, else last)")
	fs.StringVar(&c.SelectMargin, "select-margin", c.SelectMargin, "with --select best, a later evaluation replaces the kept model only when its validation AUC is higher by more than: se (the kept AUC's standard error) or off (default: se when the wide part starts at the baseline, else off)")
	fs.IntVar(&c.EarlyStop, "early-stop", c.EarlyStop, "stop after N evaluations without a better validation AUC (0: never; -1: chosen from the training rows with a validation split: 10, or as many as span about 1000 steps where evaluations are further apart, at least 4)")
	fs.BoolVar(&c.Baseline, "baseline", c.Baseline, "also fit a logistic-regression baseline on the same columns (tables)")
	fs.IntVar(&c.BaselineRows, "baseline-rows", c.BaselineRows, "training rows the baseline reads at most (0: 50000)")
	fs.IntVar(&c.EvalBatch, "eval-batch", c.EvalBatch, "rows per evaluation message (0: 8192 wdl/mlp, --batch for cnn)")
	fs.IntVar(&c.ACEBins, "ace-bins", c.ACEBins, "bins of the adaptive calibration error")
	fs.StringVar(&c.WireEmbedding, "wire-embedding", c.WireEmbedding, "encoding of the embeddings the passive party sends: "+strings.Join(wire.Names(), ", ")+" (the passive rounds to it; see METHODS, wire encodings)")
	fs.StringVar(&c.WireGradient, "wire-gradient", c.WireGradient, "encoding of the gradients the active party sends: "+strings.Join(wire.Names(), ", ")+" (the active rounds the protected gradient to it)")
	fs.StringVar(&c.WireCompression, "wire-compression", c.WireCompression, "lossless compression of the packed messages between two processes: "+strings.Join(wire.CompressionNames(), ", ")+" (default none; the values and records are the same either way, an in-process run only records it; see METHODS, wire encodings)")
	fs.IntVar(&c.Staleness, "staleness", c.Staleness, "pipelined schedule: the passive sends the next K batches' embeddings while a gradient is in flight (0: the exact protocol; see docs/methods/wan.md)")
	fs.Float64Var(&c.StalenessPrediction, "staleness-prediction", c.StalenessPrediction, "with --staleness: the passive forwards each batch it sends ahead with its weights extrapolated along its last update, F times the updates not yet applied (linear weight prediction; 0: off; see docs/methods/wan.md)")
	fs.IntVar(&c.LocalSteps, "local-steps", c.LocalSteps, "FedBCD local updates: each party takes Q updates per exchange on the cached partner message (0 or 1: none extra; see docs/methods/wan.md)")
	fs.IntVar(&c.LocalCache, "local-cache", c.LocalCache, "CELU-VFL: each party caches the last W exchanged batches' partner messages and draws every local update's batch from them, least used first (0 or 1: the batch just exchanged; needs --local-steps > 1)")
	fs.Func("local-weight-threshold", "CELU-VFL instance weighting: each cached row of a local update is weighted by the cosine similarity of its stale and fresh statistics, rows under XI dropped (-1 keeps all; unset: no weighting)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		c.LocalWeightThreshold = &v
		return nil
	})
	fs.BoolVar(&c.WireFeedback, "wire-feedback", c.WireFeedback, "error feedback for a lossy --wire-gradient: the active adds each training row's rounding residual to the row's next gradient (see docs/methods/wan.md)")
	fs.StringVar(&c.Protect, "protect", c.Protect, "gradient protection: "+strings.Join(protect.Names(), ", "))
	defenceFlags(fs, &c.Params)
	fs.StringSliceVar(&c.Attacks, "attacks", c.Attacks, "attacks to audit every batch: "+strings.Join(attack.Names(), ", ")+", or all")
	fs.BoolVar(&c.PositivesMinority, "positives-minority", c.PositivesMinority, "spectral attacker's prior: positives are the minority")
	fs.IntVar(&c.KnownLabels, "known-labels", c.KnownLabels, "model-completion attacks: training labels the attacker knows, half of each class (0: 40)")
	fs.IntVar(&c.TunedKnown, "tuned-known", c.TunedKnown, "tuned attackers: beside every per-batch attack, one that knows the labels of N rows of each batch (2-64) and tunes its parameters on them (0: off)")
	fs.IntVar(&c.TunedBudget, "tuned-budget", c.TunedBudget, "tuned attackers: candidate settings each tries (0: 8)")
	fs.IntVar(&c.ExpensiveEvery, "expensive-every", c.ExpensiveEvery, "expensive attacks (exploit, gradmatch and their tuned twins) score only steps 0, N, 2N, … (0 or 1: every batch)")
	fs.StringSliceVar(&c.PassiveColumns, "passive-columns", c.PassiveColumns, "vertical split: the passive party's feature columns (default: those --active-columns leaves; neither: both parties read every column)")
	fs.StringSliceVar(&c.ActiveColumns, "active-columns", c.ActiveColumns, "vertical split: the active party's own feature columns, all its wide part reads (default: those --passive-columns leaves)")
	fs.StringSliceVar(&c.FeatureAttacks, "feature-attacks", c.FeatureAttacks, "attacks of the active party on the passive party's features at every evaluation: "+strings.Join(feature.Names(), ", ")+" (default: none)")
	fs.IntVar(&c.FeatureAux, "feature-aux", c.FeatureAux, "feature attacks: training rows whose passive features the attacker knows (0: 1000)")
	fs.StringVar(&c.Hijack, "hijack", c.Hijack, "simulate a malicious active party that hijacks the passive's training: fsha (feature-space hijacking; its public rows are the feature attacker's --feature-aux rows; its reconstruction is scored as feature attack fsha; on images, of the test images, with a picture in fsha-reconstructions.png)")
	integrityFlags(fs, c)
	partiesFlags(fs, c)
	fs.StringVar(&c.Out, "out", c.Out, "run directory to write")
	fs.StringVar(&c.Dump, "dump", c.Dump, "write per-batch .npy dumps (gradients, embeddings, labels, IDs) here")
	fs.IntVar(&c.DumpBatches, "dump-batches", c.DumpBatches, "how many batches --dump writes")
	fs.Int64Var(&c.MaxSteps, "max-steps", c.MaxSteps, "stop after N training steps (0: all epochs)")
}

func newTrainCmd() *cobra.Command {
	cfg := config.Default()
	var configFile, uiAddr string
	var force bool
	cmd := &cobra.Command{
		Use:   "train --data PATH --out DIR [flags]",
		Short: "Run two-party split training in one process, auditing label leakage every batch",
		Long: "train runs both parties in this process and writes the run directory --out. It refuses an --out that\n" +
			"holds another run (a finished one, or one of another configuration) unless --force, and an --out\n" +
			"that another process is writing.\n\n" + exitStatusHelp,
		Args: uiArgs(&uiAddr),
		RunE: func(cmd *cobra.Command, args []string) error {
			final, err := resolveConfig(cmd.Flags(), configFile, cfg)
			if err != nil {
				return err
			}
			_, err = trainAndReport(cmd.Context(), final, uiAddr, force, cmd.OutOrStdout(), cmd.ErrOrStderr())
			return err
		},
	}
	trainFlags(cmd.Flags(), &cfg)
	addForceFlag(cmd.Flags(), &force)
	cmd.Flags().StringVar(&configFile, "config", "", "YAML config file; its keys mirror the flags, flags given on the command line win")
	addUIFlag(cmd.Flags(), &uiAddr)
	return cmd
}

// resolveConfig applies, in order: defaults, the config file, then the
// flags the user set explicitly.
func resolveConfig(fs *pflag.FlagSet, configFile string, fromFlags config.Config) (config.Config, error) {
	if configFile == "" {
		return fromFlags, nil
	}
	fileCfg, err := config.LoadFile(configFile, config.Default())
	if err != nil {
		return fromFlags, err
	}
	err = reapplyFlags(fs, func(over *pflag.FlagSet) { trainFlags(over, &fileCfg) })
	return fileCfg, err
}

// reapplyFlags sets every flag the user gave explicitly on fs (except
// --config) again on a fresh flag set that bind binds to the config read
// from the file, so that command-line flags win over the file.
func reapplyFlags(fs *pflag.FlagSet, bind func(*pflag.FlagSet)) error {
	over := pflag.NewFlagSet("over", pflag.ContinueOnError)
	bind(over)
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if f.Name == "config" || err != nil {
			return
		}
		if g := over.Lookup(f.Name); g != nil {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				err = g.Value.(pflag.SliceValue).Replace(sv.GetSlice())
			} else {
				err = g.Value.Set(f.Value.String())
			}
		}
	})
	return err
}

func trainAndReport(ctx context.Context, cfg config.Config, uiAddr string, force bool, stdout, stderr io.Writer) (*rundir.Summary, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := notifyStop(ctx, func(name string) {
		fmt.Fprintf(stderr, "splitguard: received %s: stopping the run; saving the models and a summary marked truncated\n", name)
	})
	defer stop()
	prog := newProgress(stderr, cfg.Batch)
	opts := run.Options{Logger: newLineLogger(prog.logWriter(), newTrainCmd()), Progress: prog.update, Force: force}
	var feed *ui.Feed
	if uiAddr != "" {
		feed = ui.NewFeed(ui.Info{Title: cfg.Out, Protect: cfg.Legend().Text, Method: cfg.Protect, IntegrityStop: cfg.IntegrityStop, IntegrityAlarm: cfg.ResolvedAlarms()})
		srv, err := ui.Start(ctx, uiAddr, feed)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(stderr, "live page:", srv.URL)
		opts.OnBatch = func(r rundir.BatchRecord) {
			feed.Batch(ui.Batch{Step: r.Step, Loss: r.Loss, Leak: r.Leak, Parties: r.Parties})
		}
		opts.OnEval = func(r rundir.EvalRecord) { feed.Eval(uiEval(r)) }
		opts.Progress = func(p rundir.Progress) { feed.SetTotal(p.Total); prog.update(p) }
	}
	sum, err := run.Train(ctx, cfg, opts)
	prog.finish()
	if feed != nil {
		feed.Done(err)
	}
	if err != nil {
		return nil, err
	}
	printSummary(stdout, cfg, sum)
	return sum, nil
}

func printSummary(w io.Writer, cfg config.Config, s *rundir.Summary) {
	fmt.Fprintf(w, "\nrun %s — protection %s, %d steps, %.0f examples/s (%s)\n", cfg.Out, s.Protect, s.Steps, s.ExamplesPerS, s.Engine)
	printSelection(w, s)
	keys := make([]string, 0, len(s.Leak))
	for k := range s.Leak {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// chance: the q95|-.5| a label-blind score would give over the same
	// batches (metrics.LeakSummary.ChanceQ95Abs).
	fmt.Fprintf(w, "%-26s %8s %8s %8s %8s %8s\n", "leak (attack/layer)", "q95", "q95|-.5|", "chance", "mean", "batches")
	fmt.Fprintln(w, strings.Repeat("-", 71))
	for _, k := range keys {
		l := s.Leak[k]
		fmt.Fprintf(w, "%-26s %8.4f %8.4f %8.4f %8.4f %8d\n", k, l.Q95, l.Q95Abs, l.ChanceQ95Abs, l.Mean, l.Batches)
	}
	printParties(w, s)
}

// printSelection prints the run's result (the model selected without
// looking at the test split), the baseline beside it, the test curve's
// top for comparison with the papers, and the warnings.
func printSelection(w io.Writer, s *rundir.Summary) {
	how := "the last model"
	if s.Select == config.SelectBest {
		how = "the model with the best validation AUC"
	}
	fmt.Fprintf(w, "result: %s, step %d%s\n", how, s.SelectedStep, map[bool]string{true: " (early stop)"}[s.EarlyStopped])
	fmt.Fprintf(w, "%-34s %10s %10s\n", "", "val AUC", "test AUC")
	opt := func(x *float64) string {
		if x == nil {
			return "—"
		}
		return fmt.Sprintf("%.4f", *x)
	}
	ci := ""
	if c := s.TestAUCSelectedCI95; c != nil {
		ci = fmt.Sprintf("  (95%% bootstrap interval %.4f–%.4f)", c[0], c[1])
	}
	fmt.Fprintf(w, "%-34s %10s %10.4f%s\n", "split model (selected)", opt(s.ValAUCSelected), s.TestAUCSelected, ci)
	if b := s.Baseline; b != nil {
		name := "logistic baseline (" + b.Columns + ")"
		if b.Error != "" {
			fmt.Fprintf(w, "%-34s %s\n", name, b.Error)
		} else {
			fmt.Fprintf(w, "%-34s %10s %10s\n", name, opt(b.ValAUC), opt(b.TestAUC))
		}
		if d := s.TestAUCMinusBaselineCI95; d != nil {
			fmt.Fprintf(w, "split model − baseline on the test rows: 95%% paired bootstrap interval %+.4f to %+.4f\n", d[0], d[1])
		}
	}
	fmt.Fprintf(w, "test loss %.4f, ACE %.4f (selected)\n", s.TestLossSelected, s.ACESelected)
	fmt.Fprintf(w, "test AUC best %.4f (step %d; chosen by looking at test: for comparison with the papers' curves, not a result), final %.4f\n",
		s.TestAUCBest, s.BestStep, s.TestAUCFinal)
	for _, m := range s.KeyedWarnings() {
		fmt.Fprintln(w, "warning:", withFlagNames(newTrainCmd(), m.Text, m.Keys))
	}
}

// imageSets lists the registered image sets for the help of --data, each
// with the folder it reads by default, e.g. "fashion-mnist (default
// /usr/share/datasets/fashion-mnist) or isic".
func imageSets() string {
	var sets []string
	for _, name := range data.ImageFormats() {
		f, _ := data.LookupImageFormat(name)
		if f.Dir != "" {
			name += " (default " + f.Dir + ")"
		}
		sets = append(sets, name)
	}
	if len(sets) < 2 {
		return strings.Join(sets, "")
	}
	return strings.Join(sets[:len(sets)-1], ", ") + " or " + sets[len(sets)-1]
}

// uiEval is what the live page shows of an evaluation record.
func uiEval(r rundir.EvalRecord) ui.Eval {
	return ui.Eval{Step: r.Step, TestAUC: r.TestAUC, TestLoss: r.TestLoss, ACE: r.ACE,
		PartyGain: r.PartyGain, Features: r.Features, Integrity: r.Integrity}
}
