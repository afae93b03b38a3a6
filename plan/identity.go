package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// Files of a plan's directory that say which table and threat it plans for.
const (
	// ConfigFile is the reference run's configuration (out empty): the
	// table, the model, the schedule, the attacks and tuned_known.
	ConfigFile = "plan.yaml"
	// SearchFile holds the limit and the search's shape.
	SearchFile = "plan.json"
)

// search is SearchFile's content.
type search struct {
	MaxLeak  float64  `json:"max_leak"`
	MinTDCS  float64  `json:"min_tdcs,omitempty"`
	Grid     int      `json:"grid"`
	MaxSteps int64    `json:"max_steps"`
	Defences []string `json:"defences"`
	// NetOfPrior says that the embedding attacks' figures in plan.csv
	// are net of the feature prior (prior.go); a plan.csv of an earlier
	// version holds raw figures, which cannot be mixed with net ones.
	NetOfPrior bool `json:"embedding_net_of_prior"`
	// CostInterval is the recommendation's prediction interval for a
	// further seed's test cost, written after every invocation that
	// recommends (absent otherwise); not part of the plan's identity.
	CostInterval *costIntervalJSON `json:"cost_interval,omitempty"`
}

// costIntervalJSON is plan.json's cost_interval.
type costIntervalJSON struct {
	Setting  string  `json:"setting"`
	Level    float64 `json:"level"`
	Seeds    int     `json:"seeds"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	SEPaired float64 `json:"se_paired"`
}

// writeCostInterval rewrites plan.json with the recommendation's cost
// interval, or without one when there is none (no recommendation, or its
// interval could not be computed).
func (o *Options) writeCostInterval(res *Result) error {
	path := filepath.Join(o.Out, SearchFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s search
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s.CostInterval = nil
	if res.Recommended >= 0 {
		r := res.Rows[res.Recommended]
		if f := r.Seeds; CostIntervalText(f) != "" {
			s.CostInterval = &costIntervalJSON{Setting: r.Legend, Level: CostLevel, Seeds: f.N, Lo: f.CostPILo, Hi: f.CostPIHi, SEPaired: f.CostSE}
		}
	}
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(j, '\n'), 0o644)
}

func (o *Options) search() search {
	s := search{MaxLeak: o.Threat.MaxLeak, MinTDCS: o.Threat.MinTDCS, Grid: o.Grid, MaxSteps: o.MaxSteps, Defences: slices.Clone(o.Defences), NetOfPrior: true}
	if s.Grid == 0 {
		s.Grid = DefaultGrid
	}
	if s.MaxSteps == 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	slices.Sort(s.Defences)
	if s.Defences == nil {
		s.Defences = []string{}
	}
	return s
}

// ErrOtherPlan is wrapped by the error of a plan directory that holds a
// plan of another table or threat.
var ErrOtherPlan = errors.New("the directory holds a plan of another table or threat")

// checkIdentity refuses a directory whose plan was started with another
// table or threat (ErrOtherPlan, naming the keys that differ), and writes
// the identity files into a directory that has none.
func (o *Options) checkIdentity(ref config.Config) error {
	cfgPath, searchPath := filepath.Join(o.Out, ConfigFile), filepath.Join(o.Out, SearchFile)
	cur := o.search()
	_, errC := os.Stat(cfgPath)
	_, errS := os.Stat(searchPath)
	switch {
	case errC == nil && errS == nil:
		keys, err := rundir.ConfigDiff(cfgPath, ref)
		if err != nil {
			return err
		}
		raw, err := os.ReadFile(searchPath)
		if err != nil {
			return err
		}
		var old search
		if err := json.Unmarshal(raw, &old); err != nil {
			return fmt.Errorf("%s: %w", searchPath, err)
		}
		if old.MaxLeak != cur.MaxLeak {
			keys = append(keys, "max_leak")
		}
		if old.MinTDCS != cur.MinTDCS {
			keys = append(keys, "min_tdcs")
		}
		if old.Grid != cur.Grid {
			keys = append(keys, "grid")
		}
		if old.MaxSteps != cur.MaxSteps {
			keys = append(keys, "max_steps")
		}
		if old.NetOfPrior != cur.NetOfPrior {
			keys = append(keys, "embedding_net_of_prior")
		}
		if !slices.Equal(old.Defences, cur.Defences) {
			keys = append(keys, "defences")
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		if len(keys) > 0 {
			return fmt.Errorf("%s: %w (keys that differ: %s): plan into another directory, or delete this one", o.Out, ErrOtherPlan, strings.Join(keys, ", "))
		}
		return nil
	case !os.IsNotExist(errC) && errC != nil:
		return errC
	case !os.IsNotExist(errS) && errS != nil:
		return errS
	}
	if rows, err := readCSV(filepath.Join(o.Out, CSVFile)); err != nil || len(rows) > 0 {
		if err != nil {
			return err
		}
		return fmt.Errorf("%s: %s has settings but %s or %s is missing: cannot tell which table and threat they were planned for", o.Out, CSVFile, ConfigFile, SearchFile)
	}
	y, err := config.Marshal(&ref)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(cfgPath, y, 0o644); err != nil {
		return err
	}
	j, err := json.MarshalIndent(cur, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(searchPath, append(j, '\n'), 0o644)
}
