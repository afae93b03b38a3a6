package run

import (
	"strings"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
)

// partyModelAttacks returns what runs the configured model attacks (model
// completion) at an evaluation on every audited view of a run with
// several passive parties: on each party's bottom over its own columns,
// and on each colluding subset's bottoms pooled (their cut outputs side
// by side, completion.Attacker.RunPooled). Every view's attacker knows
// the labels of the same training rows (the run's known_labels, drawn as
// in a one-passive run) and is scored on the test split. It returns nil
// figures when no model attack is configured.
func partyModelAttacks(cfg *config.Config, views [][]int, names []string, bottoms []model.Bottom, pvs []*view) (func() (map[string]map[string]float64, error), error) {
	if len(attack.ModelNames(cfg.AttackNames())) == 0 {
		return func() (map[string]map[string]float64, error) { return nil, nil }, nil
	}
	rows, err := completion.Pick(pvs[0].train.Labels, cfg.Known(), completion.DefaultUnlabelled, cfg.Seed)
	if err != nil {
		return nil, err
	}
	attackers := make([]*completion.Attacker, len(views))
	for v := range views {
		if attackers[v], err = completion.New(cfg.AttackNames(), rows, cfg.EvalBatch, cfg.Seed); err != nil {
			return nil, err
		}
		if cfg.TunedKnown > 0 {
			if err := attackers[v].Tune(cfg.TunedBudgetOr()); err != nil {
				return nil, err
			}
		}
	}
	return func() (map[string]map[string]float64, error) {
		out := make(map[string]map[string]float64, len(views))
		for v, members := range views {
			var bs []model.Bottom
			var train, test []*data.Features
			var mn []string
			for _, k := range members {
				bs = append(bs, bottoms[k])
				train, test = append(train, pvs[k].train.X), append(test, pvs[k].test.X)
				mn = append(mn, names[k])
			}
			res, err := attackers[v].RunPooled(bs, train, test, pvs[0].test.Labels)
			if err != nil {
				return nil, err
			}
			out[strings.Join(mn, "+")] = completion.Flatten(res, nil)
		}
		return out, nil
	}, nil
}
