package plan

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
)

// ConfirmFile is the table of the confirmation runs in a plan's
// directory: plan.csv's columns, a line per setting and seed.
const ConfirmFile = "confirm.csv"

// confirmDir is the run directory of setting s with confirmation seed
// seed, beside the setting's own ("runs/marvell_marvell_s=1_seed=2").
func confirmDir(out string, s Setting, seed uint64) string {
	return runDir(out, s) + "_seed=" + strconv.FormatUint(seed, 10)
}

// confirm chooses the recommendation among res.Rows (the search's, with
// their costs): without a confirmation the cheapest setting that meets
// the limit on the plan's seed. With one it takes the settings that meet
// it in the tie rule's order, trains each with the confirmation seeds
// (the plan's seed + 1, …, + ConfirmSeeds; the reference with the same
// seeds first, for each seed's cost and T-DCS) and recommends the first
// that meets the limits on every seed and, with a leak limit, whose
// prediction bound for a further seed's judged leak (SeedFigures.LeakPred,
// from the plan's seed and the confirmation seeds) is within the limit;
// a setting that misses the limit at a seed is rejected there, without
// its later seeds. Each run is appended to
// confirm.csv, which a rerun reads back instead of training again. When
// the budget ends before a setting is confirmed or rejected nothing is
// recommended (res.Pending). It fills every row's Seeds.
func (o *Options) confirm(ctx context.Context, res *Result, clk *clock) error {
	rows := res.Rows
	n := res.ConfirmSeeds
	cands := candidates(rows, o.Threat)
	res.TieSE = TieSE(rows[0])
	if n == 0 {
		if len(cands) > 0 {
			res.Recommended = cands[0]
		} else {
			res.Closest = closest(rows, o.Threat)
		}
		return nil
	}
	path := filepath.Join(o.Out, ConfirmFile)
	conf, err := readCSV(path)
	if err != nil {
		return err
	}
	type at struct {
		key  string
		seed uint64
	}
	have := map[at]int{}
	for i, r := range conf {
		have[at{r.Key(), r.Seed}] = i
	}
	// seedRow returns row i's setting's row at confirmation seed k,
	// training it when confirm.csv has none; ok is false when the budget
	// is spent.
	seedRow := func(i, k int) (r Row, ok bool, err error) {
		s := rows[i].Setting
		j := job{index: rows[i].Index, setting: s, confirm: k, done: len(rows), total: res.Total}
		if c, found := have[at{s.Key(), j.seed(o.Base.Seed)}]; found {
			return conf[c], true, nil
		}
		if !clk.allows(0) {
			return Row{}, false, nil
		}
		o.logger().Info(fmt.Sprintf("confirming setting %d/%d (%s): seed %d (%d of %d)", j.index+1, res.Total, s.Legend().Text, j.seed(o.Base.Seed), k, n))
		r, err = o.try(ctx, j, res.Attacks, clk)
		if err != nil {
			return Row{}, false, err
		}
		r.Index = rows[i].Index
		have[at{s.Key(), r.Seed}] = len(conf)
		conf = append(conf, r)
		return r, true, writeCSV(path, conf)
	}
	for _, c := range cands {
		verdict := Confirmed
		seen := []Row{rows[c]} // its rows at the seeds trained so far
		for k := 1; k <= n && verdict == Confirmed; k++ {
			ref, ok, err := seedRow(0, k)
			if err != nil {
				return err
			}
			if !ok {
				verdict = Pending
				break
			}
			refAUC := ref.ValAUC
			if ref.Err != "" {
				refAUC = math.NaN()
			}
			r, ok, err := seedRow(c, k)
			switch {
			case err != nil:
				return err
			case !ok:
				verdict = Pending
			default:
				if judge(&r, refAUC, o.Threat); !r.Met {
					verdict = Rejected
				}
				seen = append(seen, r)
			}
		}
		if pred := sumSeeds(seen).LeakPred; verdict == Confirmed && o.Threat.MaxLeak > 0 && !(pred <= o.Threat.MaxLeak) {
			verdict, rows[c].Seeds.ByPrediction = Rejected, true
			o.logger().Info(fmt.Sprintf("setting %d (%s) met the limit with every seed, but a further seed's leak may not: %.0f%% prediction bound %.4f from %d seeds, above %g: rejected", rows[c].Index+1, rows[c].Legend, 100*PredictionLevel, pred, len(seen), o.Threat.MaxLeak))
		} else if verdict == Rejected {
			o.logger().Info(fmt.Sprintf("setting %d (%s) met the limit with seed %d but not with every seed: rejected", rows[c].Index+1, rows[c].Legend, o.Base.Seed))
		}
		rows[c].Seeds.Verdict = verdict
		switch verdict {
		case Confirmed:
			res.Recommended = c
		case Pending:
			res.Pending, res.BudgetSpent = c, true
		case Rejected:
			res.Rejected = append(res.Rejected, rows[c])
			continue
		}
		break
	}
	o.sumSeeds(rows, conf)
	if res.Recommended >= 0 {
		o.setCostInterval(&rows[res.Recommended], rows[0], conf)
	}
	if len(conf) > 0 { // with each seed's cost and T-DCS
		if err := writeCSV(path, conf); err != nil {
			return err
		}
	}
	for i, r := range res.Rejected { // with their figures over the seeds
		res.Rejected[i] = rows[slices.IndexFunc(rows, func(x Row) bool { return x.Key() == r.Key() })]
	}
	if res.Recommended < 0 && res.Pending < 0 {
		res.Closest = closest(rows, o.Threat)
	}
	return nil
}

// sumSeeds sets every row's Seeds from its row and its confirmation rows
// of the confirmation's seeds (conf; the cost and T-DCS of a seed against
// the reference's row of that seed), and rewrites conf's costs.
func (o *Options) sumSeeds(rows []Row, conf []Row) {
	refAUC := map[uint64]float64{}
	for _, r := range conf {
		if r.Key() == Reference.Key() && r.Err == "" {
			refAUC[r.Seed] = r.ValAUC
		}
	}
	bySetting := map[string][]Row{}
	for i := range conf {
		r := &conf[i]
		ref, ok := refAUC[r.Seed]
		if !ok {
			ref = math.NaN()
		}
		judge(r, ref, o.Threat)
		if r.Seed > o.Base.Seed && r.Seed <= o.Base.Seed+uint64(o.confirmSeeds()) {
			bySetting[r.Key()] = append(bySetting[r.Key()], *r)
		}
	}
	for i := range rows {
		verdict, byPred := rows[i].Seeds.Verdict, rows[i].Seeds.ByPrediction
		rows[i].Seeds = sumSeeds(append([]Row{rows[i]}, bySetting[rows[i].Key()]...))
		rows[i].Seeds.Verdict, rows[i].Seeds.ByPrediction = verdict, byPred
	}
}
