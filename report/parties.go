package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// PartyStat is one passive party's, or one colluding subset's, entry of
// summary.json's parties map (a run with several passive parties).
type PartyStat struct {
	Members      []string            `json:"members"`
	Leak         map[string]LeakStat `json:"leak"`
	GainSelected *float64            `json:"gain_selected"`
	GainFinal    *float64            `json:"gain_final"`
	// EvalAttacksFinal are the model attacks' figures on the party's
	// bottom (a subset's pooled) at the last evaluation.
	EvalAttacksFinal map[string]float64 `json:"eval_attacks_final"`
}

// modelAttackAUCs is the cell of a party's model-attack AUCs at the last
// evaluation ("completion 0.7897"), "—" without.
func modelAttackAUCs(figs map[string]float64) Cell {
	var parts []string
	sortKey := ""
	for _, k := range slices.Sorted(maps.Keys(figs)) {
		name, ok := strings.CutSuffix(k, "/auc")
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.4f", name, figs[k]))
		if sortKey == "" {
			sortKey = fmt.Sprintf("%.6f", figs[k])
		}
	}
	if len(parts) == 0 {
		return Cell{Text: "—", Class: "txt"}
	}
	return Cell{Text: strings.Join(parts, ", "), Sort: sortKey, Class: "txt"}
}

// partiesSection is the table of each run's per-party figures: every
// passive party's and colluding subset's mean and q95 leak of each
// attack at the cut, and each party's leave-one-party-out gain (nil when
// no run has several passive parties).
func (b *builder) partiesSection() (*Section, error) {
	var rows [][]Cell
	for _, r := range b.set.Runs {
		if r.Summary == nil || len(r.Summary.Parties) == 0 {
			continue
		}
		ps := r.Summary.Parties
		names := slices.SortedFunc(maps.Keys(ps), func(a, c string) int {
			if d := len(ps[a].Members) - len(ps[c].Members); d != 0 {
				return d
			}
			return strings.Compare(a, c)
		})
		for _, n := range names {
			p := ps[n]
			who := "party"
			if len(p.Members) > 1 {
				who = fmt.Sprintf("%d colluding", len(p.Members))
			}
			gain, gainKey := fmtF(p.GainSelected, 4)
			for _, k := range slices.Sorted(maps.Keys(p.Leak)) {
				if _, layer := splitKey(k); layer != "cut" {
					continue
				}
				l := p.Leak[k]
				mean, meanKey := fmtF(l.Mean, 4)
				q95, q95Key := fmtF(l.Q95, 4)
				rows = append(rows, []Cell{
					{Text: r.Name, Sort: r.Name, Class: "txt"},
					{Text: n, Sort: n, Class: "txt"},
					{Text: who, Sort: strconv.Itoa(len(p.Members)), Class: "txt"},
					{Text: k, Sort: k, Class: "txt"},
					{Text: mean, Sort: meanKey},
					{Text: q95, Sort: q95Key},
					{Text: gain, Sort: gainKey},
					modelAttackAUCs(p.EvalAttacksFinal),
				})
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &Section{ID: "parties", Title: "Per passive party",
		Lead: "Runs with several passive parties: the leak of what each passive party received (its block of the gradient), " +
			"and of what each colluding subset received together (the union of its members' blocks), at the cut; the gain is " +
			"the validation AUC minus that with the party's embedding replaced by its means (leave-one-party-out; contribution: true in the run's config.yaml), " +
			"at the selected evaluation; the model attacks' AUC is theirs on the party's final bottom (a subset's bottoms pooled) " +
			"with the run's known labels.",
		Table: &Table{Head: []Cell{{Text: "run", Class: "txt"}, {Text: "party", Class: "txt"}, {Text: "who", Class: "txt"},
			{Text: "attack/layer", Class: "txt"}, {Text: "mean leak AUC"}, {Text: "q95 leak AUC"}, {Text: "gain (val AUC)"}, {Text: "model attack AUC (final)", Class: "txt"}},
			Rows: rows}}, nil
}
