package completion

import (
	"fmt"
	"path/filepath"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// LoadRun loads an in-process run directory for an offline model attack:
// its resolved configuration, its data reloaded with labels (the same
// seeded split, rows in canonical order; under a vertical split the
// passive party's columns only) and its trained bottom model.
func LoadRun(dir string) (*config.Config, *data.Split, model.Bottom, error) {
	cfg, split, err := rundir.LoadRun(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if split.Train.Labels == nil || split.Test.Labels == nil {
		return nil, nil, nil, fmt.Errorf("run %s: its data %s has no labels", dir, cfg.Data)
	}
	// Under a vertical split the bottom reads the passive's columns only.
	for _, d := range []*data.Dataset{split.Train, split.Test} {
		if d.X, _, err = cfg.SplitFeatures(d.X); err != nil {
			return nil, nil, nil, err
		}
	}
	bottom, err := cfg.BuildBottom(split.Train.X)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, rundir.BottomModelFile), bottom.Load); err != nil {
		return nil, nil, nil, err
	}
	return cfg, split, bottom, nil
}
