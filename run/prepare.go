package run

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/rundir"
)

// clearRunDir readies the locked run directory cfg.Out: a directory
// holding another run is refused unless opt.Force, and nothing of an
// earlier run stays (this one writes every file anew), temporary files of
// interrupted writes included.
func clearRunDir(cfg config.Config, opt Options) error {
	if err := rundir.CheckReuse(cfg.Out, func(path string) ([]string, error) { return rundir.ConfigDiff(path, cfg) }); err != nil {
		if !errors.Is(err, rundir.ErrOtherRun) || !opt.Force {
			return err
		}
		logf(opt.logger(), "replacing the run in %s (force)", cfg.Out)
	}
	if err := rundir.Clear(cfg.Out); err != nil {
		return err
	}
	if removed, err := atomicfile.CleanTemps(cfg.Out); err != nil {
		return err
	} else if len(removed) > 0 {
		logf(opt.logger(), "removed %d temporary files interrupted writes left: %v", len(removed), removed)
	}
	return nil
}

// loadRows loads the data, holds out the validation rows val of the
// training rows (train: the rest), resolves the settings left to the
// data into cfg, writes config.yaml and the encoding, and logs what was
// loaded.
func loadRows(cfg *config.Config, opt Options) (split *data.Split, train, val *data.Dataset, err error) {
	if split, err = cfg.LoadData(); err != nil {
		return nil, nil, nil, err
	}
	split.SortByID()
	if err := checkClasses(split); err != nil {
		return nil, nil, nil, err
	}
	train, val = data.SplitValidation(split.Train, cfg.Seed, cfg.ValFrac)
	cfg.ResolveForData(len(train.IDs))
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if err := writeResolved(cfg, split); err != nil {
		return nil, nil, nil, err
	}
	logRows(cfg, opt, split, train, val)
	return split, train, val, nil
}

// writeResolved writes the resolved configuration (config.yaml) and the
// split's encoding, which it then drops: a large vocabulary is not kept
// in memory through training.
func writeResolved(cfg *config.Config, split *data.Split) error {
	resolved, err := config.Marshal(cfg)
	if err != nil {
		return err
	}
	resolved = append([]byte(cfg.YAMLHeader()), resolved...)
	if err := atomicfile.WriteFile(filepath.Join(cfg.Out, rundir.ConfigFile), resolved, 0o644); err != nil {
		return err
	}
	if split.Encoding != nil {
		if err := data.SaveEncoding(filepath.Join(cfg.Out, rundir.EncodingFile), split.Encoding); err != nil {
			return err
		}
		split.Encoding = nil
	}
	return nil
}

// logRows logs the rows of each split, the warnings about the batch size
// and the settings chosen for the data.
func logRows(cfg *config.Config, opt Options, split *data.Split, train, val *data.Dataset) {
	logf(opt.logger(), "data: %d training rows (%.1f%% positive), %d validation rows, %d test rows", len(train.IDs),
		100*posRate(train.Labels), len(val.IDs), len(split.Test.IDs))
	if w := config.BatchWarning(cfg.Batch, len(train.IDs), cfg.Epochs); w.Text != "" {
		opt.logger().Warn(w.Text, w.LogArgs()...)
	}
	if w := config.PositivesWarning(cfg.Batch, posRate(train.Labels)); w.Text != "" {
		opt.logger().Warn(w.Text, w.LogArgs()...) // and in the summary (openRecorder)
	}
	if len(cfg.Auto) > 0 {
		logf(opt.logger(), "settings %s", cfg.AutoNote())
	}
}

// startBaseline starts fitting the baseline beside training, on its own
// goroutine (the step leaves a core idle much of the time), and returns
// what waits for it and logs it (nil when the run has no baseline). It
// only reads the splits, which training does not change; cancelling ctx
// abandons it. With a vertical split it fits the active party's own
// columns (what it gets without the passive party), as a two-party run.
func startBaseline(ctx context.Context, cfg config.Config, opt Options, split *data.Split, av *view) func() *rundir.BaselineSummary {
	if !cfg.Baseline || split.Train.X == nil || split.Train.X.Image != nil || av.train.X.NumCat+av.train.X.NumDense <= 0 {
		return nil
	}
	done := make(chan *rundir.BaselineSummary, 1)
	btrain, bval, btest, cols := av.train, av.val, av.test, "all"
	if cfg.VerticalSplit() {
		cols = baselineOwn
	}
	go func() { done <- rundir.FitBaselineContext(ctx, btrain, bval, btest, cfg.BaselineRows, cols, true) }()
	return func() *rundir.BaselineSummary {
		b := <-done
		logf(opt.logger(), "%s", b.Line())
		return b
	}
}
