package run

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// startWide starts the wide part of top at the logistic baseline (key
// wide_start: baseline), waiting for its fit: the baseline is fitted on
// the active party's rows and columns (startBaseline), which are exactly
// the wide part's. base must be callable more than once (the summary asks
// for it again).
func startWide(cfg *config.Config, top model.Top, base func() *rundir.BaselineSummary) error {
	if cfg.WideStart != config.WideStartBaseline {
		return nil
	}
	dt, ok := top.(*model.DeepTop)
	if !ok || !dt.HasWide() || base == nil {
		return fmt.Errorf("the wide part starts from the baseline (key wide_start), but the run has no wide part or no baseline")
	}
	b := base()
	fit := b.Fit()
	if fit == nil {
		return config.Keyed(fmt.Errorf("the wide part starts from the baseline (key wide_start), which could not be fitted: %s", b.Error), "wide_start")
	}
	return dt.StartWide(model.WideStart{W: fit.W, B: fit.B, Mean: fit.Mean, Scale: fit.Scale, Lambda: fit.Lambda, Penalise: true})
}
