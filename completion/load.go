package completion

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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
	return LoadPartyRun(dir, "")
}

// ErrSeveralParties says that a run has several passive parties, each with
// its own bottom, and no party was named.
var ErrSeveralParties = errors.New("the run has several passive parties, each with its own bottom")

// LoadPartyRun is LoadRun for passive party party of an in-process run
// with several passive parties (key parties): its columns and its bottom
// (bottom.model for the first party, bottom_NAME.model for the others).
// party "" is LoadRun; naming a party of a one-passive run, or one the run
// does not have, is an error.
func LoadPartyRun(dir, party string) (*config.Config, *data.Split, model.Bottom, error) {
	cfg, err := rundir.LoadRunConfig(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	k := -1
	switch {
	case party == "" && cfg.MultiParty():
		return nil, nil, nil, fmt.Errorf("run %s: %w (%s)", dir, ErrSeveralParties, strings.Join(cfg.PartyNames(), ", "))
	case party != "" && !cfg.MultiParty():
		return nil, nil, nil, fmt.Errorf("run %s has one passive party; %q names none", dir, party)
	case party != "":
		if k, err = partyIndex(dir, cfg, party); err != nil {
			return nil, nil, nil, err
		}
	}
	split, err := loadLabelled(dir, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	// Under a vertical split the bottom reads the passive's columns only;
	// with several passive parties, party k's.
	for _, d := range []*data.Dataset{split.Train, split.Test} {
		if k >= 0 {
			px, _, err := cfg.PartyFeatures(d.X)
			if err != nil {
				return nil, nil, nil, err
			}
			d.X = px[k]
			continue
		}
		if d.X, _, err = cfg.SplitFeatures(d.X); err != nil {
			return nil, nil, nil, err
		}
	}
	bottom, err := loadBottom(dir, cfg, k, split.Train.X)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, split, bottom, nil
}

// partyIndex returns the index of passive party name among the run's
// parties (key parties).
func partyIndex(dir string, cfg *config.Config, name string) (int, error) {
	k := slices.Index(cfg.PartyNames(), name)
	if k < 0 {
		return -1, fmt.Errorf("run %s has no passive party %q (it has %s)", dir, name, strings.Join(cfg.PartyNames(), ", "))
	}
	return k, nil
}

// loadLabelled reloads the data of run dir (configuration cfg) with its
// labels, the run's seeded split.
func loadLabelled(dir string, cfg *config.Config) (*data.Split, error) {
	split, err := rundir.LoadRunData(cfg)
	if err != nil {
		return nil, err
	}
	if split.Train.Labels == nil || split.Test.Labels == nil {
		return nil, fmt.Errorf("run %s: its data %s has no labels", dir, cfg.Data)
	}
	return split, nil
}

// loadBottom builds the bottom of passive party k of run dir (k < 0: the
// run's one passive party) over its training columns x and loads the
// trained bottom the run saved (bottom.model for the first or only
// party, bottom_NAME.model for the others).
func loadBottom(dir string, cfg *config.Config, k int, x *data.Features) (model.Bottom, error) {
	bc, file := *cfg, rundir.BottomModelFile
	if k >= 0 {
		bc = cfg.PartyConfig(k)
		if k > 0 {
			file = rundir.PartyBottomFile(cfg.PartyNames()[k])
		}
	}
	bottom, err := bc.BuildBottom(x)
	if err != nil {
		return nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, file), bottom.Load); err != nil {
		return nil, err
	}
	return bottom, nil
}
