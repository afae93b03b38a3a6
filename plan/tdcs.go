package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/metrics"
)

// TDCS is VFLAIR's T-DCS of a setting (docs/methods/defences-peer.md,
// "DCS and T-DCS"): the mean over the threat's attacks of
// metrics.DCS(AP, 0, MP, MP*, ½), with AP = 2·leak (the attack's Leak, its
// strongest layer: stricter than the report's cut-layer figure), MP the
// setting's validation AUC and MP* the reference's (no defence). NaN when
// either AUC is NaN or no attack has a figure.
func TDCS(leak map[string]float64, valAUC, refValAUC float64) float64 {
	if math.IsNaN(valAUC) || math.IsNaN(refValAUC) {
		return math.NaN()
	}
	dcs := make([]float64, 0, len(leak))
	for _, a := range slices.Sorted(maps.Keys(leak)) {
		dcs = append(dcs, metrics.DCS(2*leak[a], 0, valAUC, refValAUC, metrics.DCSBeta))
	}
	return metrics.MeanDCS(dcs)
}

// judge sets every row's T-DCS (against the reference, index 0) and
// whether it meets the threat's limits: a working run with a validation
// AUC whose strongest leak is at most MaxLeak (when set) and whose T-DCS
// is at least MinTDCS (when set).
func (t Threat) judge(rows []Row) {
	ref := math.NaN()
	if len(rows) > 0 && rows[0].Index == 0 && rows[0].Err == "" {
		ref = rows[0].ValAUC
	}
	for i := range rows {
		r := &rows[i]
		r.TDCS = TDCS(r.Leak, r.ValAUC, ref)
		r.Met = r.Err == "" && !math.IsNaN(r.ValAUC) && !math.IsNaN(r.StrongestLeak)
		if t.MaxLeak > 0 {
			r.Met = r.Met && r.StrongestLeak <= t.MaxLeak
		}
		if t.MinTDCS > 0 {
			r.Met = r.Met && !math.IsNaN(r.TDCS) && r.TDCS >= t.MinTDCS
		}
	}
}

// nearer orders the settings nearest the limit when none meets it: with
// a leak limit the smallest strongest leak first, with only a T-DCS floor
// the largest T-DCS first; ties: the smallest cost.
func (t Threat) nearer(a, b Row) bool {
	if t.MaxLeak <= 0 && a.TDCS != b.TDCS {
		return a.TDCS > b.TDCS
	}
	if a.StrongestLeak != b.StrongestLeak {
		return a.StrongestLeak < b.StrongestLeak
	}
	return a.Cost < b.Cost
}

// LimitText says the threat's limits: "strongest leak ≤ 0.3", "T-DCS ≥
// 0.8" or both joined by "and".
func (t Threat) LimitText() string {
	var parts []string
	if t.MaxLeak > 0 {
		parts = append(parts, fmt.Sprintf("strongest leak ≤ %g", t.MaxLeak))
	}
	if t.MinTDCS > 0 {
		parts = append(parts, fmt.Sprintf("T-DCS ≥ %g", t.MinTDCS))
	}
	return strings.Join(parts, " and ")
}

// figureLimit is the leak limit the frontier figure draws: NaN (none)
// without a leak limit.
func (t Threat) figureLimit() float64 {
	if t.MaxLeak > 0 {
		return t.MaxLeak
	}
	return math.NaN()
}
