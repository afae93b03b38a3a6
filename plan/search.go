package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// Run plans into o.Out: it tries the settings of [Settings] in order,
// skipping those plan.csv already holds, until every one is tried or the
// budget is spent (keeping time for the confirmation), rewriting plan.csv
// after each; then confirms the cheapest settings within the limit on
// further seeds (confirm.go) and writes the frontier figure and, when a
// setting meets the limit on every seed, recommended.yaml.
// Every setting trains with run.Train on the training split without the
// validation rows and is judged by the validation AUC of its selected
// model and the leak figures of its training batches; nothing of the
// test split is read into a figure (run.Train evaluates the test split
// beside, into the run directory's files only). When ctx is cancelled
// the setting in progress is dropped and the error says so: a rerun
// continues.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	clk := &clock{now: now, deadline: now().Add(o.Budget)}
	attacks, err := resolveAttacks(o.Threat.Attacks)
	if err != nil {
		return nil, err
	}
	settings, err := Settings(o.Grid, o.Defences)
	if err != nil {
		return nil, err
	}
	ref := o.runConfig(Reference, attacks)
	ref.Out = runDir(o.Out, Reference)
	ref.Resolve()
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	lock, err := rundir.Lock(o.Out)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := o.checkIdentity(o.runConfig(Reference, attacks)); err != nil {
		return nil, err
	}
	if err := o.writePriorConfig(attacks); err != nil {
		return nil, err
	}
	csvPath := filepath.Join(o.Out, CSVFile)
	rows, err := readCSV(csvPath)
	if err != nil {
		return nil, err
	}
	reindex(rows, settings)
	done := map[string]bool{}
	for i, r := range rows {
		// A failed reference is tried again: nothing is judged without it.
		done[r.Key()] = r.Err == "" || r.Key() != Reference.Key()
		rows[i].Seed = o.Base.Seed // a table of an earlier version has no seed column
	}
	rows = slices.DeleteFunc(rows, func(r Row) bool { return !done[r.Key()] })
	res := &Result{Total: len(settings), Resumed: len(rows), Attacks: attacks, Recommended: -1, Pending: -1, ConfirmSeeds: o.confirmSeeds()}
	for i, s := range settings {
		if done[s.Key()] {
			continue
		}
		// Time is kept for the confirmation: the reference's and two
		// settings' confirmation seeds at the mean time of a setting.
		if i > 0 && !clk.allows(time.Duration(3*res.ConfirmSeeds)*clk.mean()) {
			res.BudgetSpent = true
			break
		}
		o.logger().Info(fmt.Sprintf("setting %d/%d: %s", i+1, len(settings), s.Legend().Text))
		row, err := o.try(ctx, job{index: i, setting: s, done: len(rows), total: len(settings)}, attacks, clk)
		if err != nil {
			return nil, err
		}
		rows = insert(rows, row)
		costs(rows, o.Threat)
		if err := writeCSV(csvPath, rows); err != nil {
			return nil, err
		}
	}
	costs(rows, o.Threat) // rows read from plan.csv too
	res.Rows = rows
	res.NetOfPrior = embeddingAttacks(attacks)
	if p, ok := o.priors[o.Base.Seed]; ok {
		res.FeaturePrior = map[string]float64{}
		for k, l := range p {
			res.FeaturePrior[k] = l.Q95Abs
		}
	}
	if len(rows) == 0 || rows[0].Index != 0 || rows[0].Err != "" {
		return res, fmt.Errorf("the reference run (no defence) failed or is missing: %s", errText(rows))
	}
	if err := o.confirm(ctx, res, clk); err != nil {
		return nil, err
	}
	if err := writeCSV(csvPath, res.Rows); err != nil { // with the confirmation's columns
		return nil, err
	}
	if err := o.writeOutputs(res); err != nil {
		return nil, err
	}
	if err := o.writeCostInterval(res); err != nil {
		return nil, err
	}
	return res, nil
}

func errText(rows []Row) string {
	if len(rows) > 0 && rows[0].Err != "" {
		return rows[0].Err
	}
	return "no row of index 0"
}

// job is one run of a plan: a setting of the search (confirm 0) or one
// of its confirmation seeds (confirm k: the plan's seed + k).
type job struct {
	index   int
	setting Setting
	confirm int
	// done and total are the search's settings in plan.csv and in all,
	// for the progress.
	done, total int
}

// seed is the job's run's seed.
func (j job) seed(base uint64) uint64 { return base + uint64(j.confirm) }

// try trains one job and returns its row; a failed run (not a cancelled
// one) is a row with Err.
func (o *Options) try(ctx context.Context, j job, attacks []string, clk *clock) (Row, error) {
	cfg := o.runConfig(j.setting, attacks)
	cfg.Out = runDir(o.Out, j.setting)
	if j.confirm > 0 {
		// Another seed, the same data and test split.
		cfg.Seed, cfg.SplitSeed = j.seed(o.Base.Seed), o.Base.DataSeed()
		cfg.Out = confirmDir(o.Out, j.setting, cfg.Seed)
	}
	legend := j.setting.Legend().Text
	opt := run.Options{Force: true}
	if o.Progress != nil {
		opt.Progress = func(p rundir.Progress) {
			o.Progress(Progress{Done: j.done, Total: j.total, Setting: legend, Step: p.Step, Steps: p.Total, Left: clk.left(),
				Confirm: j.confirm, ConfirmSeeds: o.confirmSeeds()})
		}
	}
	row := Row{Index: j.index, Setting: j.setting, Legend: legend, Seed: cfg.Seed, ValAUC: math.NaN(), Cost: math.NaN(), StrongestLeak: math.NaN(), Bound: math.NaN(), Chance: math.NaN()}
	train := o.train
	if train == nil {
		train = run.Train
	}
	t0 := clk.now()
	sum, err := train(ctx, cfg, opt)
	clk.record(clk.now().Sub(t0))
	if ctx.Err() != nil {
		what := fmt.Sprintf("setting %d (%s)", j.index+1, legend)
		if j.confirm > 0 {
			what = fmt.Sprintf("the confirmation of setting %d (%s) with seed %d", j.index+1, legend, cfg.Seed)
		}
		return row, fmt.Errorf("plan stopped during %s, which is dropped: %w", what, errors.Join(context.Cause(ctx), err))
	}
	if err != nil {
		row.Err = err.Error()
		o.logger().Warn(fmt.Sprintf("setting %d (%s), seed %d, failed: %v", j.index+1, legend, cfg.Seed, err))
		return row, nil
	}
	prior, err := o.featurePrior(ctx, cfg.Seed, attacks)
	if ctx.Err() != nil {
		return row, fmt.Errorf("plan stopped during the feature prior of seed %d: %w", cfg.Seed, errors.Join(context.Cause(ctx), err))
	}
	if err != nil {
		row.Err = err.Error()
		o.logger().Warn(fmt.Sprintf("setting %d (%s), seed %d: %v", j.index+1, legend, cfg.Seed, err))
		return row, nil
	}
	net := *sum
	net.Leak = maps.Clone(sum.Leak)
	netOfPrior(&net, prior)
	figures(&row, &net, o.Threat.MaxLeak)
	return row, nil
}

// clock is a plan's time: the budget's deadline and the durations of
// the runs of this invocation.
type clock struct {
	now      func() time.Time
	deadline time.Time
	longest  time.Duration
	total    time.Duration
	runs     int
}

// left is the budget's time left.
func (c *clock) left() time.Duration { return c.deadline.Sub(c.now()) }

// allows says whether a run may start: time is left, and no less than
// the longest run so far took plus reserve.
func (c *clock) allows(reserve time.Duration) bool {
	left := c.left()
	return left > 0 && left >= c.longest+reserve
}

// record counts a run of duration d.
func (c *clock) record(d time.Duration) {
	c.longest = max(c.longest, d)
	c.total += d
	c.runs++
}

// mean is the mean duration of the runs so far (0 before the first).
func (c *clock) mean() time.Duration {
	if c.runs == 0 {
		return 0
	}
	return c.total / time.Duration(c.runs)
}

// reindex gives the rows read from plan.csv their places in this
// invocation's search order (which a defence registered since changes);
// a row whose setting is no longer searched goes after every other, in
// file order. It sorts rows by place.
func reindex(rows []Row, settings []Setting) {
	pos := make(map[string]int, len(settings))
	for i, s := range settings {
		pos[s.Key()] = i
	}
	for i := range rows {
		if p, ok := pos[rows[i].Key()]; ok {
			rows[i].Index = p
		} else {
			rows[i].Index = len(settings) + i
		}
	}
	slices.SortStableFunc(rows, func(a, b Row) int { return a.Index - b.Index })
}

// insert puts r into rows in index order.
func insert(rows []Row, r Row) []Row {
	i := len(rows)
	for i > 0 && rows[i-1].Index > r.Index {
		i--
	}
	rows = append(rows, Row{})
	copy(rows[i+1:], rows[i:])
	rows[i] = r
	return rows
}

// costs sets every row's cost, the reference's (index 0) validation AUC
// minus the row's, and its T-DCS (TDCS, against the reference); with a
// T-DCS floor, a row below it does not meet the limits.
func costs(rows []Row, th Threat) {
	ref := math.NaN()
	if len(rows) > 0 && rows[0].Index == 0 {
		ref = rows[0].ValAUC
	}
	for i := range rows {
		judge(&rows[i], ref, th)
	}
}

// judge sets r's cost and T-DCS against the reference's validation AUC
// ref (the reference trained with r's seed) and whether r meets the
// limits: its judged leak (judgedLeak, on enough batches: leakOK) within
// the leak limit, its T-DCS at or above the floor.
func judge(r *Row, ref float64, th Threat) {
	r.Cost = ref - r.ValAUC
	r.TDCS = TDCS(r.Leak, r.ValAUC, ref)
	r.Met = r.Err == "" && !math.IsNaN(r.ValAUC) && leakOK(*r, th.MaxLeak) &&
		(th.MinTDCS == 0 || r.TDCS >= th.MinTDCS)
}

// recommend returns the setting the tie rule puts first among those
// that meet the limit on their one seed (candidates' first), -1 when none
// does, and then the rows nearest the limit (closest): the choice without
// a confirmation.
func recommend(rows []Row, th Threat) (int, []Row) {
	if c := candidates(rows, th); len(c) > 0 {
		return c[0], nil
	}
	return -1, closest(rows, th)
}

// candidates returns the indexes of the rows that meet the limit in the
// tie rule's order (rank): costs within the reference's validation AUC
// standard error (TieSE) of the cheapest count as equal, and among those
// the widest margin under the limit goes first. Measured step times are
// not compared: they move with the machine's load, and a plan's choice
// must not.
func candidates(rows []Row, th Threat) []int {
	var out []int
	for i, r := range rows {
		if r.Met && !math.IsNaN(r.Cost) {
			out = append(out, i)
		}
	}
	se := 0.0
	if len(rows) > 0 && rows[0].Index == 0 {
		se = TieSE(rows[0])
	}
	return rank(rows, out, th, se)
}

// closest returns the three rows nearest the limit: the smallest
// strongest leak, or with a T-DCS floor and no leak limit the largest
// T-DCS (tie: smallest cost). A row trained with several seeds counts with
// its figures over them (its largest leak, its smallest T-DCS).
func closest(rows []Row, th Threat) []Row {
	leak := func(r Row) float64 {
		if r.Seeds.N > 1 {
			return r.Seeds.Leak
		}
		return r.StrongestLeak
	}
	tdcs := func(r Row) float64 {
		if r.Seeds.N > 1 {
			return r.Seeds.TDCS
		}
		return r.TDCS
	}
	var ok []Row
	for _, r := range rows {
		if r.Err == "" && !math.IsNaN(leak(r)) {
			ok = append(ok, r)
		}
	}
	slices.SortStableFunc(ok, func(a, b Row) int {
		if ta, tb := tdcs(a), tdcs(b); th.MaxLeak == 0 && ta != tb && !math.IsNaN(ta) && !math.IsNaN(tb) {
			return cmp.Compare(tb, ta)
		}
		if c := cmp.Compare(leak(a), leak(b)); c != 0 {
			return c
		}
		return cmp.Compare(a.Cost, b.Cost)
	})
	return ok[:min(3, len(ok))]
}
