package plan

import (
	"math"
	"strconv"
)

// Verdicts of a setting's confirmation (SeedFigures.Verdict, plan.csv
// column confirmation).
const (
	// Confirmed: the setting meets the limits on the plan's seed and on
	// every confirmation seed.
	Confirmed = "confirmed"
	// Rejected: it meets them on the plan's seed but not on a
	// confirmation seed (or that seed's run failed), or, with a leak
	// limit, its prediction bound for a further seed's leak
	// (SeedFigures.LeakPred) is above the limit.
	Rejected = "rejected"
	// Pending: the budget ended before every confirmation seed was
	// trained; a rerun continues.
	Pending = "pending"
)

// SeedFigures sums up one setting's figures over the plan's seed and the
// confirmation seeds trained (a seed's cost and T-DCS are against the
// reference trained with the same seed).
type SeedFigures struct {
	// N is the number of seeds with a row, the plan's included; a
	// failed run counts.
	N int
	// Leak is the largest strongest leak over the seeds, the statistic
	// the confirmation judges; LeakLo the smallest.
	Leak, LeakLo float64
	// LeakBound is the largest judged leak over the seeds (each seed's
	// 95% upper bound on its strongest q95 where it has one, judgedLeak):
	// the figure a seed is held to against the leak limit. Not a plan.csv
	// column: it is recomputed from the rows.
	LeakBound float64
	// LeakPred is the one-sided PredictionLevel prediction bound
	// (predictionUpper) for the judged leak (judgedLeak) of a further
	// seed, from the seeds' judged leaks: what the confirmation judges
	// against the leak limit besides every seed's own figure. At most ½,
	// the largest |AUC − ½| there is.
	LeakPred float64
	// TDCS is the smallest T-DCS over the seeds.
	TDCS float64
	// Cost is the mean cost over the seeds, CostLo and CostHi the
	// smallest and the largest.
	Cost, CostLo, CostHi float64
	// CostPILo and CostPIHi bound the CostLevel prediction interval for
	// a further seed's test cost (costInterval), CostSE is the paired
	// AUC difference's standard error on the test split's size in it
	// (DeLong, from the validation scores): the recommended setting's
	// only, NaN for the others and where the scores could not be
	// reloaded.
	CostPILo, CostPIHi, CostSE float64
	// Verdict is the confirmation's (Confirmed, Rejected, Pending), empty
	// for a setting not confirmed.
	Verdict string
	// ByPrediction says a Rejected setting met the limits on every seed
	// and was rejected by LeakPred alone.
	ByPrediction bool
}

// maxLeak is the largest |AUC − ½|: no leak figure exceeds it.
const maxLeak = 0.5

// seedColumns are plan.csv's columns of SeedFigures.
var seedColumns = []string{"confirm_seeds", "confirm_leak_max", "confirm_leak_min", "confirm_leak_pred95", "confirm_tdcs_min", "confirm_cost_mean", "confirm_cost_min", "confirm_cost_max", "confirm_cost_pi95_lo", "confirm_cost_pi95_hi", "confirm_cost_se_paired", "confirmation"}

// columns renders the figures in seedColumns' order: empty for a row
// trained with one seed only (and for confirm.csv's rows).
func (f SeedFigures) columns() []string {
	if f.N < 2 {
		out := make([]string, len(seedColumns))
		out[len(out)-1] = f.Verdict
		return out
	}
	return []string{strconv.Itoa(f.N), fmtF(f.Leak), fmtF(f.LeakLo), fmtF(f.LeakPred), fmtF(f.TDCS), fmtF(f.Cost), fmtF(f.CostLo), fmtF(f.CostHi), fmtF(f.CostPILo), fmtF(f.CostPIHi), fmtF(f.CostSE), f.Verdict}
}

// sumSeeds returns the figures of rows, one setting's rows at different
// seeds (a failed run's NaNs make the statistics NaN: a setting whose run
// failed at a seed has no figure that holds).
func sumSeeds(rows []Row) SeedFigures {
	f := SeedFigures{N: len(rows), Leak: math.Inf(-1), LeakBound: math.Inf(-1), LeakLo: math.Inf(1), TDCS: math.Inf(1), CostLo: math.Inf(1), CostHi: math.Inf(-1),
		CostPILo: math.NaN(), CostPIHi: math.NaN(), CostSE: math.NaN()}
	judged := make([]float64, len(rows))
	for i, r := range rows {
		if r.Err != "" {
			r.StrongestLeak, r.Bound, r.TDCS, r.Cost = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		judged[i] = judgedLeak(r)
		f.LeakBound = math.Max(f.LeakBound, judged[i])
		f.Leak, f.LeakLo = math.Max(f.Leak, r.StrongestLeak), math.Min(f.LeakLo, r.StrongestLeak)
		f.TDCS = math.Min(f.TDCS, r.TDCS)
		f.Cost += r.Cost
		f.CostLo, f.CostHi = math.Min(f.CostLo, r.Cost), math.Max(f.CostHi, r.Cost)
	}
	f.Cost /= float64(len(rows))
	f.LeakPred = math.Min(predictionUpper(judged, PredictionLevel), maxLeak)
	return f
}
