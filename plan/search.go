package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// Run plans into o.Out: it tries the settings of [Settings] in order,
// skipping those plan.csv already holds, until every one is tried or the
// budget is spent, rewriting plan.csv after each, and then writes the
// frontier figure and, when a setting meets the limit, recommended.yaml.
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
	start := now()
	deadline := start.Add(o.Budget)
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
	csvPath := filepath.Join(o.Out, CSVFile)
	rows, err := readCSV(csvPath)
	if err != nil {
		return nil, err
	}
	reindex(rows, settings)
	done := map[string]bool{}
	for _, r := range rows {
		// A failed reference is tried again: nothing is judged without it.
		done[r.Key()] = r.Err == "" || r.Key() != Reference.Key()
	}
	rows = slices.DeleteFunc(rows, func(r Row) bool { return !done[r.Key()] })
	res := &Result{Total: len(settings), Resumed: len(rows), Attacks: attacks, Recommended: -1}
	var longest time.Duration
	for i, s := range settings {
		if done[s.Key()] {
			continue
		}
		left := deadline.Sub(now())
		if i > 0 && (left <= 0 || left < longest) {
			res.BudgetSpent = true
			break
		}
		o.logger().Info(fmt.Sprintf("setting %d/%d: %s", i+1, len(settings), s.Legend().Text))
		t0 := now()
		row, err := o.try(ctx, i, s, attacks, len(rows), len(settings), deadline, now)
		if err != nil {
			return nil, err
		}
		longest = max(longest, now().Sub(t0))
		rows = insert(rows, row)
		costs(rows)
		o.Threat.judge(rows)
		if err := writeCSV(csvPath, rows); err != nil {
			return nil, err
		}
	}
	res.Rows = rows
	if len(rows) == 0 || rows[0].Index != 0 || rows[0].Err != "" {
		return res, fmt.Errorf("the reference run (no defence) failed or is missing: %s", errText(rows))
	}
	o.Threat.judge(rows)
	res.Recommended, res.Closest = recommend(rows, o.Threat)
	if err := o.writeOutputs(res); err != nil {
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

// try trains one setting and returns its row; a failed run (not a
// cancelled one) is a row with Err.
func (o *Options) try(ctx context.Context, i int, s Setting, attacks []string, done, total int, deadline time.Time, now func() time.Time) (Row, error) {
	cfg := o.runConfig(s, attacks)
	cfg.Out = runDir(o.Out, s)
	opt := run.Options{Force: true}
	if o.Progress != nil {
		legend := s.Legend().Text
		opt.Progress = func(p rundir.Progress) {
			o.Progress(Progress{Done: done, Total: total, Setting: legend, Step: p.Step, Steps: p.Total, Left: deadline.Sub(now())})
		}
	}
	row := Row{Index: i, Setting: s, Legend: s.Legend().Text, ValAUC: math.NaN(), Cost: math.NaN(), StrongestLeak: math.NaN(), Chance: math.NaN()}
	sum, err := run.Train(ctx, cfg, opt)
	if ctx.Err() != nil {
		return row, fmt.Errorf("plan stopped during setting %d (%s), which is dropped: %w", i+1, row.Legend, errors.Join(context.Cause(ctx), err))
	}
	if err != nil {
		row.Err = err.Error()
		o.logger().Warn(fmt.Sprintf("setting %d (%s) failed: %v", i+1, row.Legend, err))
		return row, nil
	}
	figures(&row, sum, o.Threat.MaxLeak)
	return row, nil
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

// costs sets every row's cost: the reference's (index 0) validation AUC
// minus the row's.
func costs(rows []Row) {
	ref := math.NaN()
	if len(rows) > 0 && rows[0].Index == 0 {
		ref = rows[0].ValAUC
	}
	for i := range rows {
		rows[i].Cost = ref - rows[i].ValAUC
	}
}

// recommend returns the index of the cheapest row that meets the limit
// (smallest cost; tie: least step time, then search order), -1 when none
// does, and then the three rows nearest the limit (Threat.nearer).
func recommend(rows []Row, t Threat) (int, []Row) {
	best := -1
	for i, r := range rows {
		if !r.Met || math.IsNaN(r.Cost) {
			continue
		}
		if best < 0 || r.Cost < rows[best].Cost || (r.Cost == rows[best].Cost && r.StepMS < rows[best].StepMS) {
			best = i
		}
	}
	if best >= 0 {
		return best, nil
	}
	var ok []Row
	for _, r := range rows {
		if r.Err == "" && !math.IsNaN(r.StrongestLeak) {
			ok = append(ok, r)
		}
	}
	less := t.nearer
	for i := 1; i < len(ok); i++ {
		for j := i; j > 0 && less(ok[j], ok[j-1]); j-- {
			ok[j], ok[j-1] = ok[j-1], ok[j]
		}
	}
	return -1, ok[:min(3, len(ok))]
}
