package main

import (
	"fmt"

	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/netrun"
)

// loadNetColluders loads the passive directories of colluding parties of
// a two-process run beside the first one (dir, already loaded as split
// and bottom) and checks that all hold the same aligned rows.
func loadNetColluders(dir string, others []string, split *data.Split, bottom model.Bottom) ([]completion.Colluder, error) {
	names := []string{dir}
	splits := []*data.Split{split}
	cs := []completion.Colluder{{Name: dir, Train: split.Train.X, Test: split.Test.X, Bottom: bottom}}
	for _, d := range others {
		_, s, b, err := netrun.LoadPassive(d)
		if err != nil {
			return nil, fmt.Errorf("--colluder %s: %w", d, err)
		}
		names, splits = append(names, d), append(splits, s)
		cs = append(cs, completion.Colluder{Name: d, Train: s.Train.X, Test: s.Test.X, Bottom: b})
	}
	if err := completion.SameRows(names, splits); err != nil {
		return nil, err
	}
	return cs, nil
}

// firstOr returns v's first element, or def when v is empty.
func firstOr(v []string, def string) string {
	if len(v) == 0 {
		return def
	}
	return v[0]
}
