package run

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
)

// featureAttacks returns what runs the configured feature attacks
// (package attack/feature) on the bottom at an evaluation: each fits on
// the cut embeddings and passive features of the auxiliary training rows
// (with the active party's own columns of those rows, when it has any)
// and reconstructs the test rows' passive features. Its figures are nil
// when none is configured. With key hijack it also returns the malicious
// active party's hijacker (FSHA, its public rows the auxiliary rows),
// whose reconstruction joins the attacks as "fsha"; else a nil Hijacker.
func featureAttacks(cfg config.Config, pv, av *view, bottom model.Bottom, top model.Top, wide bool) (func() (map[string]float64, error), active.Hijacker, error) {
	if len(cfg.FeatureAttacks) == 0 && cfg.Hijack == "" {
		return func() (map[string]float64, error) { return nil, nil }, nil, nil
	}
	if pv.train.X != nil && pv.train.X.Image != nil && cfg.Hijack != "" {
		return imageHijack(cfg, pv, bottom)
	}
	ev, err := feature.NewEvaluator(cfg.FeatureAttacks, pv.train.X, pv.test.X, av.train.X, av.test.X,
		cfg.FeatureAuxRows(), cfg.Seed, cfg.EvalBatch)
	if err != nil {
		return nil, nil, err
	}
	if top != nil {
		ev.SetJoint(topCopy(&cfg, top, av.train.X, wide), wide)
	}
	var hijack active.Hijacker
	if cfg.Hijack == config.HijackFSHA {
		fsha, err := newFSHA(cfg, ev.AuxTruth(), bottom.CutDim(), pv.train.X)
		if err != nil {
			return nil, nil, err
		}
		ev.Add(fsha)
		hijack = fsha
	}
	return func() (map[string]float64, error) { return ev.Run(bottom) }, hijack, nil
}

// FeatureFigures runs the feature attacks of cfg (FeatureAttacks,
// FeatureAux, Seed, EvalBatch) on a trained bottom, as at an evaluation
// of the in-process run: pas holds the passive party's training rows
// (without the validation rows) and test rows with its columns, act the
// active party's own columns of the same rows (nil, or nil features: none,
// as for a passive party auditing itself). It returns the figures of
// eval.jsonl's features.
func FeatureFigures(cfg config.Config, pas, act *data.Split, bottom model.Bottom) (map[string]float64, error) {
	if len(cfg.FeatureAttacks) == 0 {
		return nil, config.Keyed(fmt.Errorf("no feature attack named (key feature_attacks)"), "feature_attacks")
	}
	if err := feature.Check(cfg.FeatureAttacks); err != nil {
		return nil, err
	}
	pv := &view{train: pas.Train, test: pas.Test}
	av := &view{train: &data.Dataset{IDs: pas.Train.IDs}, test: &data.Dataset{IDs: pas.Test.IDs}}
	if act != nil {
		av.train, av.test = act.Train, act.Test
	}
	if av.train.X != nil && av.train.X.Rows != pv.train.X.Rows || av.test.X != nil && av.test.X.Rows != pv.test.X.Rows {
		return nil, fmt.Errorf("the active party's columns cover other rows than the passive's")
	}
	cfg.Hijack = "" // a saved bottom: no training left to hijack
	run, _, err := featureAttacks(cfg, pv, av, bottom, nil, false)
	if err != nil {
		return nil, err
	}
	return run()
}

// AttackFeatures runs the feature attacks names with aux auxiliary rows (0:
// the run's key feature_aux) on the trained bottom of the in-process run
// in dir (its bottom.model: the selected model), reloading its data as the
// run split it; the figures are those of eval.jsonl's features.
func AttackFeatures(dir string, names []string, aux int) (map[string]float64, error) {
	cfg, split, err := rundir.LoadRun(dir)
	if err != nil {
		return nil, err
	}
	cfg.FeatureAttacks = names
	if aux != 0 {
		cfg.FeatureAux = aux
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pv, av, err := partyViews(cfg, split, split.Train, nil)
	if err != nil {
		return nil, err
	}
	bottom, err := cfg.BuildBottom(pv.train.X)
	if err != nil {
		return nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, rundir.BottomModelFile), bottom.Load); err != nil {
		return nil, err
	}
	return FeatureFigures(*cfg, pv.split(), av.split(), bottom)
}

// topCopy returns what copies top at its state of the moment (built for
// the active party's own columns ax when the top reads them, wide), for
// an attack that holds the joint model (GRN) and must leave the run's top
// alone.
func topCopy(cfg *config.Config, top model.Top, ax *data.Features, wide bool) func() (feature.Joint, error) {
	if !wide {
		ax = nil
	}
	return func() (feature.Joint, error) {
		var buf bytes.Buffer
		if err := top.Save(&buf); err != nil {
			return nil, err
		}
		t, _, err := cfg.BuildTop(ax)
		if err != nil {
			return nil, err
		}
		if err := t.Load(&buf); err != nil {
			return nil, err
		}
		return t, nil
	}
}
