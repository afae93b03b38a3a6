package run

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// startWide starts the wide part of top at the logistic baseline (key
// wide_start: baseline), waiting for its fit: the baseline is fitted on
// the active party's rows and columns (startBaseline), which are exactly
// the wide part's. base must be callable more than once (the summary asks
// for it again). When the baseline could not be fitted (training rows of
// one class), a start the data chose falls back to a random one, with a
// warning (warn: the recorder's); a start the configuration gave is an error.
func startWide(cfg *config.Config, top model.Top, base func() *rundir.BaselineSummary, warn func(msg string, keys ...string)) error {
	if cfg.WideStart != config.WideStartBaseline {
		return nil
	}
	dt, ok := innerDeepTop(top)
	if !ok || !dt.HasWide() || base == nil {
		return fmt.Errorf("the wide part starts from the baseline (key wide_start), but the run has no wide part or no baseline")
	}
	b := base()
	fit := b.Fit()
	if fit == nil {
		err := fmt.Errorf("the wide part starts from the baseline (key wide_start), which could not be fitted: %s", b.Error)
		if !slices.Contains(cfg.Auto, "wide_start") {
			return config.Keyed(err, "wide_start")
		}
		warn(err.Error()+"; it starts at random", "wide_start")
		return nil
	}
	return dt.StartWide(model.WideStart{W: fit.W, B: fit.B, Mean: fit.Mean, Scale: fit.Scale, Lambda: fit.Lambda, Penalise: true})
}

// innerDeepTop returns the Wide&Deep top inside top: top itself, or the
// top that a defence's wrapper (an input layer such as MID's, a label
// codec such as CAE's or KDk's) trains behind it, found through the
// wrappers' Unwrap. The wide part reads the active party's own columns
// beside the wrapper, so it starts from the baseline the same way.
func innerDeepTop(top model.Top) (*model.DeepTop, bool) {
	for {
		switch t := top.(type) {
		case *model.DeepTop:
			return t, true
		case interface{ Unwrap() model.Top }:
			top = t.Unwrap()
		default:
			return nil, false
		}
	}
}
