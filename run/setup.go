package run

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/rundir"
)

// openRecorder opens cfg's run directory for recording, with opt's hooks,
// and warns in the summary of batches with too few positives of train.
// The caller closes it.
func openRecorder(cfg config.Config, opt Options, train *data.Dataset) (*rundir.Recorder, error) {
	rec, err := rundir.Open(cfg, false, rundir.Hooks{OnBatch: opt.OnBatch, OnEval: opt.OnEval, Progress: opt.Progress,
		Logger: opt.Logger})
	if err != nil {
		return nil, err
	}
	if w := config.PositivesWarning(cfg.Batch, posRate(train.Labels)); w.Text != "" {
		rec.Warn(w.Text, w.Keys...)
	}
	return rec, nil
}

// partyConfigs returns the active party's and a passive party's
// configurations of an in-process run, without their observers: the
// defences def, the validation rows of val (nil: none; told to rec), the
// wire encodings, and the passive's stop taken from the recorder.
func partyConfigs(cfg *config.Config, def *config.Defences, wide bool, val *data.Dataset, rec *rundir.Recorder) (active.Config, passive.Config, error) {
	valRows := 0
	if val != nil {
		valRows = len(val.IDs)
	}
	rec.SetValRows(valRows)
	if val != nil {
		rec.SetValLabels(val.Labels)
	}
	enc, err := cfg.Wire()
	if err != nil {
		return active.Config{}, passive.Config{}, fmt.Errorf("config: %w", err)
	}
	ac := active.Config{
		Protector: def.Protector, Loss: def.Loss, TrainLabels: def.TrainLabels, TrainTargets: def.TrainTargets, Wide: wide, ACEBins: cfg.ACEBins, Seed: cfg.Seed,
		ValRows: valRows, WireGradient: enc.Gradient, WireFeedback: cfg.WireFeedback, Contribution: cfg.Contribution,
		LocalSteps: cfg.LocalSteps, LocalCache: cfg.LocalCache, LocalWeightThreshold: cfg.LocalWeightThreshold,
	}
	pc := passive.Config{Epochs: cfg.Epochs, MaxSteps: cfg.MaxSteps, EvalEvery: cfg.EvalEvery, EvalBatch: cfg.EvalBatch,
		WireEmbedding: enc.Embedding, Staleness: cfg.Staleness, StalenessPrediction: cfg.StalenessPrediction, LocalSteps: cfg.LocalSteps,
		LocalCache: cfg.LocalCache, LocalWeightThreshold: cfg.LocalWeightThreshold,
		// Both parties run in this process: the passive learns when to
		// stop from the recorder (a networked passive cannot; see netrun).
		Stop: func(int64) bool { return rec.Stalled() }}
	return ac, pc, nil
}
