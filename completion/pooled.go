package completion

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// Colluder is what one passive party of a colluding subset brings to a
// pooled model attack: its name, its columns of the training and test
// rows and its trained bottom.
type Colluder struct {
	Name        string
	Train, Test *data.Features
	Bottom      model.Bottom
}

// LoadColludersRun loads an in-process run with several passive parties
// for a model attack by the colluding subset parties (two or more of its
// party names, each once): the resolved configuration, the data reloaded
// once with its labels (the run's seeded split; the returned split's
// features are the whole table's) and each colluder's columns and bottom,
// in the order given. The run's in-run figure for the subset is keyed by
// the names joined with "+" in the run's party order.
func LoadColludersRun(dir string, parties []string) (*config.Config, *data.Split, []Colluder, error) {
	cfg, err := rundir.LoadRunConfig(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if !cfg.MultiParty() {
		return nil, nil, nil, fmt.Errorf("run %s has one passive party: there is no subset of parties to pool", dir)
	}
	if len(parties) < 2 {
		return nil, nil, nil, fmt.Errorf("a colluding subset of %d parties (%s), want two or more", len(parties), strings.Join(parties, ", "))
	}
	ks := make([]int, len(parties))
	for i, p := range parties {
		if ks[i], err = partyIndex(dir, cfg, p); err != nil {
			return nil, nil, nil, err
		}
		if slices.Contains(parties[:i], p) {
			return nil, nil, nil, fmt.Errorf("party %q named twice in a colluding subset", p)
		}
	}
	split, err := loadLabelled(dir, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	trainX, _, err := cfg.PartyFeatures(split.Train.X)
	if err != nil {
		return nil, nil, nil, err
	}
	testX, _, err := cfg.PartyFeatures(split.Test.X)
	if err != nil {
		return nil, nil, nil, err
	}
	out := make([]Colluder, len(parties))
	for i, k := range ks {
		bottom, err := loadBottom(dir, cfg, k, trainX[k])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("party %s: %w", parties[i], err)
		}
		out[i] = Colluder{Name: parties[i], Train: trainX[k], Test: testX[k], Bottom: bottom}
	}
	return cfg, split, out, nil
}

// ErrRowsDiffer says that colluders' run directories do not hold the same
// training and test rows in the same order, so their bottoms' outputs
// cannot be put side by side row by row.
var ErrRowsDiffer = errors.New("the colluders' rows differ")

// SameRows checks that every split holds the training and the test IDs of
// the first, in the same order: colluding parties of one run (aligned by
// the same private set intersection and split alike) do.
func SameRows(names []string, splits []*data.Split) error {
	for i := 1; i < len(splits); i++ {
		for _, part := range []struct {
			what string
			a, b []uint64
		}{{"training", splits[0].Train.IDs, splits[i].Train.IDs}, {"test", splits[0].Test.IDs, splits[i].Test.IDs}} {
			if !slices.Equal(part.a, part.b) {
				return fmt.Errorf("%w: %s and %s hold %d and %d %s rows, not the same IDs in the same order", ErrRowsDiffer, names[0], names[i], len(part.a), len(part.b), part.what)
			}
		}
	}
	return nil
}

// Pool returns the colluders' bottoms and features in the form
// Attacker.RunPooled takes.
func Pool(cs []Colluder) (bottoms []model.Bottom, train, test []*data.Features) {
	for _, c := range cs {
		bottoms, train, test = append(bottoms, c.Bottom), append(train, c.Train), append(test, c.Test)
	}
	return bottoms, train, test
}
