package netrun

import (
	"fmt"
	"path/filepath"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// LoadPassive loads what the passive party of a finished two-party run
// holds, for offline attacks on its trained bottom (splitguard attack
// completion): the configuration in dir, the party's data loaded with the
// training options (the same training and test rows, without labels) and
// the bottom model dir/bottom.model.
func LoadPassive(dir string) (*Config, *data.Split, model.Bottom, error) {
	cfg, err := LoadConfigFile(filepath.Join(dir, rundir.ConfigFile), Default())
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.Resolve()
	cfg.partyColumns(false)
	cfg.multiPartyColumns("passive") // one of several passive parties: its entry's columns
	pd, err := loadParty(&cfg, false)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("passive data %s: %w", cfg.Data, err)
	}
	bottom, err := newBottom(&cfg, pd.split.Train.X)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := rundir.ReadModel(filepath.Join(dir, rundir.BottomModelFile), bottom.Load); err != nil {
		return nil, nil, nil, err
	}
	return &cfg, pd.split, bottom, nil
}
