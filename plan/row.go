package plan

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
)

// CSVFile is the plan's table of every setting tried, in its directory.
const CSVFile = "plan.csv"

// leakPrefix starts the name of an attack's column in plan.csv.
const leakPrefix = "leak:"

// Row is one setting tried: a line of plan.csv.
type Row struct {
	// Index is the setting's position in the search order (Settings) of
	// the invocation that wrote plan.csv.
	Index int
	Setting
	// Legend is the setting's legend (protect.Describe).
	Legend string
	// ValAUC is the selected model's validation AUC (summary.json
	// val_auc_selected); Cost is the reference's ValAUC minus it.
	ValAUC, Cost float64
	// Leak is, per attack (a tuned attacker under its own name
	// "ATTACK_tuned"), the largest summary.json leak q95_abs over the
	// layers it was scored at: the 95% quantile over the training batches
	// of |leak AUC − ½|.
	Leak map[string]float64
	// Strongest is the attack with the largest Leak, StrongestLeak its
	// value.
	Strongest     string
	StrongestLeak float64
	// Bound is the figure judged against the leak limit: the largest,
	// over the attacks and layers, of the upper 95% confidence bound on
	// the batches' q95 (leakBound); NaN in a plan.csv written before it
	// was (then StrongestLeak is judged). Batches is the fewest training
	// batches a per-batch attack scored (0: unknown or none); below
	// MinLeakBatches the row does not meet the limit.
	Bound   float64
	Batches int
	// ValRows and ValPositives are the run's validation rows and their
	// positives (summary.json val_rows, val_positives): the reference's
	// give the tie rule's standard error (TieSE).
	ValRows, ValPositives int
	// Chance is the chance floor of the strongest attack's figure
	// (summary.json leak chance_q95_abs at its layer): what a label-blind
	// score gives over the same batches.
	Chance float64
	// StepMS is the mean step time (summary.json step_ms_mean), Seconds
	// the run's wall time.
	StepMS, Seconds float64
	// TDCS is the setting's T-DCS against the reference (TDCS).
	TDCS float64
	// Met says the run worked and meets the limits: StrongestLeak at most
	// the leak limit, TDCS at least the T-DCS floor.
	Met bool
	// Err is why the run failed, or empty.
	Err string
	// Seed is the run's seed (config key seed): the plan's in plan.csv, a
	// confirmation seed in confirm.csv.
	Seed uint64
	// Seeds sums up the setting's figures over the plan's seed and the
	// confirmation seeds trained so far (plan.csv only; zero in
	// confirm.csv).
	Seeds SeedFigures
}

func fmtF(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func parseF(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// attackColumns returns the attacks any row has a figure of, sorted.
func attackColumns(rows []Row) []string {
	set := map[string]bool{}
	for _, r := range rows {
		for k := range r.Leak {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// encodeCSV renders rows as plan.csv.
func encodeCSV(rows []Row) ([]byte, error) {
	attacks := attackColumns(rows)
	head := []string{"index", "protect", "params", "legend", "val_auc", "cost"}
	for _, a := range attacks {
		head = append(head, leakPrefix+a)
	}
	head = append(head, "strongest_attack", "strongest_leak", "leak_bound", "batches", "chance", "tdcs", "step_ms", "seconds", "met", "error", "seed", "val_rows", "val_positives")
	head = append(head, seedColumns...)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(head)
	for _, r := range rows {
		rec := []string{strconv.Itoa(r.Index), r.Protect, r.ParamsText(), r.Legend, fmtF(r.ValAUC), fmtF(r.Cost)}
		for _, a := range attacks {
			v, ok := r.Leak[a]
			if !ok {
				v = math.NaN()
			}
			rec = append(rec, fmtF(v))
		}
		rec = append(rec, r.Strongest, fmtF(r.StrongestLeak), fmtF(r.Bound), strconv.Itoa(r.Batches), fmtF(r.Chance), fmtF(r.TDCS), strconv.FormatFloat(r.StepMS, 'f', 3, 64),
			strconv.FormatFloat(r.Seconds, 'f', 2, 64), strconv.FormatBool(r.Met), r.Err, strconv.FormatUint(r.Seed, 10),
			strconv.Itoa(r.ValRows), strconv.Itoa(r.ValPositives))
		rec = append(rec, r.Seeds.columns()...)
		_ = w.Write(rec)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// writeCSV writes rows to path whole (atomicfile): an interrupted write
// leaves the previous table.
func writeCSV(path string, rows []Row) error {
	b, err := encodeCSV(rows)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b, 0o644)
}

// readCSV reads plan.csv; a missing file is no rows.
func readCSV(path string) ([]Row, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"index", "protect", "params", "legend", "val_auc", "cost", "strongest_attack", "strongest_leak", "chance", "step_ms", "seconds", "met", "error"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("%s: no column %q", path, h)
		}
	}
	var rows []Row
	for n, rec := range recs[1:] {
		bad := func(err error) error { return fmt.Errorf("%s line %d: %w", path, n+2, err) }
		var r Row
		var err error
		if r.Index, err = strconv.Atoi(rec[col["index"]]); err != nil {
			return nil, bad(err)
		}
		r.Protect, r.Legend, r.Strongest, r.Err = rec[col["protect"]], rec[col["legend"]], rec[col["strongest_attack"]], rec[col["error"]]
		if r.Params, err = parseParams(rec[col["params"]]); err != nil {
			return nil, bad(err)
		}
		for _, f := range []struct {
			name string
			dst  *float64
		}{{"val_auc", &r.ValAUC}, {"cost", &r.Cost}, {"strongest_leak", &r.StrongestLeak}, {"chance", &r.Chance}, {"step_ms", &r.StepMS}, {"seconds", &r.Seconds}} {
			if *f.dst, err = parseF(rec[col[f.name]]); err != nil {
				return nil, bad(err)
			}
		}
		if r.Met, err = strconv.ParseBool(rec[col["met"]]); err != nil {
			return nil, bad(err)
		}
		r.TDCS = math.NaN() // a table of an earlier version has no column; costs recomputes it
		if i, ok := col["tdcs"]; ok {
			if r.TDCS, err = parseF(rec[i]); err != nil {
				return nil, bad(err)
			}
		}
		if i, ok := col["seed"]; ok { // a table of an earlier version has no column: the plan's seed
			if r.Seed, err = strconv.ParseUint(rec[i], 10, 64); err != nil {
				return nil, bad(err)
			}
		}
		// Columns a table of an earlier version lacks: no bound (NaN), the
		// counts unknown (0).
		r.Bound = math.NaN()
		if i, ok := col["leak_bound"]; ok {
			if r.Bound, err = parseF(rec[i]); err != nil {
				return nil, bad(err)
			}
		}
		for _, f := range []struct {
			name string
			dst  *int
		}{{"batches", &r.Batches}, {"val_rows", &r.ValRows}, {"val_positives", &r.ValPositives}} {
			if i, ok := col[f.name]; ok {
				if *f.dst, err = strconv.Atoi(rec[i]); err != nil {
					return nil, bad(err)
				}
			}
		}
		r.Leak = map[string]float64{}
		for i, h := range recs[0] {
			if a, ok := strings.CutPrefix(h, leakPrefix); ok && rec[i] != "" {
				if r.Leak[a], err = parseF(rec[i]); err != nil {
					return nil, bad(err)
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}
