package plan

import (
	"cmp"
	"math"
	"strings"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/rundir"
)

// MinLeakBatches is the fewest training batches a per-batch attack must
// have scored for a setting to be judged against the leak limit: the
// fewest from which an order statistic bounds the batches' 95% quantile
// of |AUC − ½| from above at 95% (metrics.MinQuantileBoundCount: 59,
// since 1 − 0.95⁵⁸ < 0.95 ≤ 1 − 0.95⁵⁹).
var MinLeakBatches = metrics.MinQuantileBoundCount(0.95, metrics.LeakBoundLevel)

// leakBound sets r.Bound and r.Batches from a run's leak summaries: the
// figure judged against the leak limit is, per attack and layer, the
// upper 95% confidence bound on the batches' 95% quantile of |AUC − ½|
// (metrics.LeakSummary.Q95AbsUpper), so that a q95 read from few batches
// counts with its uncertainty; an attack that scores whole epochs
// (attack.Needs.EpochMemory) counts with its q95, each of its figures
// being an AUC over every training row. Bound is the largest over the
// series; Batches the fewest batches of a per-batch series (0: none). A
// per-batch series with fewer than MinLeakBatches batches has no bound
// (NaN), and the row then does not meet the limit (leakOK).
func leakBound(r *Row, s *rundir.Summary) {
	r.Bound, r.Batches = math.NaN(), 0
	any := false
	for k, l := range s.Leak {
		at, _, _ := strings.Cut(k, "/")
		v := l.Q95AbsUpper
		if epochAttack(at) {
			v = l.Q95Abs
		} else if l.Batches > 0 && (r.Batches == 0 || l.Batches < r.Batches) {
			r.Batches = l.Batches
		}
		if math.IsNaN(v) {
			continue
		}
		if !any || v > r.Bound {
			r.Bound, any = v, true
		}
	}
}

// epochAttack says whether the attack registered as name (a tuned
// attacker as "ATTACK_tuned") scores whole epochs.
func epochAttack(name string) bool {
	d, err := attack.Describe(strings.TrimSuffix(name, "_tuned"))
	return err == nil && d.EpochMemory
}

// judgedLeak is the figure of r judged against the leak limit: its bound
// (leakBound), or its strongest q95 for a row of a plan.csv written
// before the bound was.
func judgedLeak(r Row) float64 {
	if !math.IsNaN(r.Bound) {
		return r.Bound
	}
	return r.StrongestLeak
}

// leakOK says whether r's leak is within limit (0: no limit) and measured
// on enough batches.
func leakOK(r Row, limit float64) bool {
	if r.Batches > 0 && r.Batches < MinLeakBatches {
		return false
	}
	l := judgedLeak(r)
	return !math.IsNaN(l) && (limit == 0 || l <= limit)
}

// TieSE is the cost difference within which two settings count as equally
// cheap: the Hanley–McNeil standard error (metrics.AUCStdErr) of the
// reference's validation AUC with its validation split's positives and
// negatives — the same margin by which the selection (key select_margin)
// refuses to prefer one evaluation over another. 0 when undefined (a
// plan.csv written before the counts were).
func TieSE(ref Row) float64 {
	se := metrics.AUCStdErr(ref.ValAUC, ref.ValPositives, ref.ValRows-ref.ValPositives)
	if math.IsNaN(se) {
		return 0
	}
	return se
}

// rank orders the settings that meet the limits (the indexes cands of
// rows) by the tie rule: the first is, among the settings whose cost is
// within se of the smallest cost, the one with the widest margin under
// the limits — the smallest judged leak (judgedLeak), or with a T-DCS
// floor alone the largest T-DCS; ties: the smaller cost, then the
// earlier in the search. The rest follow by the same rule applied to
// those left. With se = 0 it is the cheapest first.
func rank(rows []Row, cands []int, th Threat, se float64) []int {
	left := append([]int(nil), cands...)
	out := make([]int, 0, len(cands))
	for len(left) > 0 {
		cheapest := math.Inf(1)
		for _, i := range left {
			cheapest = math.Min(cheapest, rows[i].Cost)
		}
		best := -1
		for j, i := range left {
			if rows[i].Cost > cheapest+se {
				continue
			}
			if best < 0 || wider(rows[i], rows[left[best]], th) {
				best = j
			}
		}
		out = append(out, left[best])
		left = append(left[:best], left[best+1:]...)
	}
	return out
}

// wider says whether a has a wider margin under the limits than b (tie:
// a is cheaper, then earlier in the search).
func wider(a, b Row, th Threat) bool {
	c := cmp.Compare(judgedLeak(a), judgedLeak(b))
	if th.MaxLeak == 0 {
		c = cmp.Compare(b.TDCS, a.TDCS)
	}
	if c == 0 {
		c = cmp.Compare(a.Cost, b.Cost)
	}
	if c == 0 {
		c = cmp.Compare(a.Index, b.Index)
	}
	return c < 0
}
