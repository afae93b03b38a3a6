package run

import (
	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
)

// pilotSeed is what FSHA's pilot's seed differs from the run's by.
const pilotSeed = 0xf5a4_9110

// imageHijack returns, for a run on images with key hijack, what scores
// the hijacker's reconstructions of the test images at an evaluation
// (feature.ImageEvaluator: MSE, pooled R²) and the hijacker (FSHA, its
// public images the feature_aux auxiliary training images, its pilot a
// bottom of the run's architecture with other initial weights).
func imageHijack(cfg config.Config, pv *view, bottom model.Bottom) (func() (map[string]float64, error), active.Hijacker, error) {
	ev, err := feature.NewImageEvaluator(pv.train.X, pv.test.X, cfg.FeatureAuxRows(), cfg.Seed, cfg.EvalBatch)
	if err != nil {
		return nil, nil, err
	}
	fsha, err := feature.NewFSHA(ev.AuxTruth(), bottom.CutDim(), cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	// The pilot: the passive's architecture (the attacker knows it), its
	// own weights.
	pc := cfg
	pc.Seed = cfg.Seed ^ pilotSeed
	pilot, err := pc.BuildBottom(pv.train.X)
	if err != nil {
		return nil, nil, err
	}
	if err := fsha.SetPilot(pilot); err != nil {
		return nil, nil, err
	}
	ev.SetHijacker(fsha)
	return func() (map[string]float64, error) { return ev.Run(bottom) }, fsha, nil
}
