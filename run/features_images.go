package run

import (
	"image/png"
	"io"
	"path/filepath"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
)

// pilotSeed is what FSHA's pilot's seed differs from the run's by.
const pilotSeed = 0xf5a4_9110

// newFSHA is FSHA over the auxiliary rows aux, its codes of width cut,
// with its pilot encoder: a bottom of the run's architecture over the
// passive's features x (the attacker knows it), with its own initial
// weights and no passive-side defence.
func newFSHA(cfg config.Config, aux *data.Features, cut int, x *data.Features) (*feature.FSHA, error) {
	fsha, err := feature.NewFSHA(aux, cut, cfg.Seed)
	if err != nil {
		return nil, err
	}
	pc := cfg
	pc.Seed = cfg.Seed ^ pilotSeed
	pc.Params, pc.PassiveOptimizer = nil, ""
	pilot, err := pc.BuildBottom(x)
	if err != nil {
		return nil, err
	}
	return fsha, fsha.SetPilot(pilot)
}

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
	fsha, err := newFSHA(cfg, ev.AuxTruth(), bottom.CutDim(), pv.train.X)
	if err != nil {
		return nil, nil, err
	}
	ev.SetHijacker(fsha)
	return func() (map[string]float64, error) {
		figs, err := ev.Run(bottom)
		if err != nil || cfg.Out == "" {
			return figs, err
		}
		// The picture a reader checks the figures against.
		err = atomicfile.Write(filepath.Join(cfg.Out, ReconstructionsFile), 0o644, func(w io.Writer) error {
			return png.Encode(w, ev.Grid(16))
		})
		return figs, err
	}, fsha, nil
}

// ReconstructionsFile is the picture of 16 test images above FSHA's
// reconstructions of them at the last evaluation, in a run on images
// with key hijack.
const ReconstructionsFile = "fsha-reconstructions.png"
