package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/metrics"
)

// TDCS is VFLAIR's T-DCS of a setting as the plan measures it: the mean
// over the attacks of DCS = 1/(1 + √(½·AP² + ½·(MP − MP*)²)), with
// AP = 2·leak (leak: the attack's q95 |leak AUC − ½| at its strongest
// layer, so AP is 0 at chance and 1 for a perfect attack), MP the
// setting's validation AUC and MP* the reference's (no defence). Where a
// tuned attacker ran (ATTACK_tuned) its figure stands for ATTACK's, as in
// the report's T-DCS. The report scores the cut layer on the test split;
// the plan never reads the test split and takes every layer's largest
// leak, so its figure is the stricter of the two. NaN when no attack has
// a figure or an AUC is NaN. The DCS is metrics.DCS with VFLAIR's β = ½
// and the ideal defence (AP 0, MP*).
func TDCS(leak map[string]float64, mp, mpRef float64) float64 {
	if math.IsNaN(mp) || math.IsNaN(mpRef) {
		return math.NaN()
	}
	var dcs []float64
	for _, a := range slices.Sorted(maps.Keys(leak)) {
		if base, ok := strings.CutSuffix(a, attack.TunedSuffix); ok {
			if _, has := leak[base]; has {
				continue // counted as base, with this figure
			}
			a = base
		}
		v, ok := leak[a+attack.TunedSuffix]
		if !ok {
			v = leak[a]
		}
		dcs = append(dcs, metrics.DCS(2*v, 0, mp, mpRef, metrics.DCSBeta))
	}
	return metrics.MeanDCS(dcs)
}

// Limits says the threat's limits in words: "strongest leak ≤ 0.1",
// "T-DCS ≥ 0.8", or both joined by "and".
func (t Threat) Limits() string {
	var parts []string
	if t.MaxLeak > 0 {
		parts = append(parts, fmt.Sprintf("%s ≤ %g", LeakLabel, t.MaxLeak))
	}
	if t.MinTDCS > 0 {
		parts = append(parts, fmt.Sprintf("T-DCS ≥ %g", t.MinTDCS))
	}
	return strings.Join(parts, " and ")
}
