package metrics

import (
	"fmt"
	"sort"
)

// AttackSuccessByConfidence splits a backdoor's attack success rate by
// how sure the clean model is that a row is not of the target class. The
// rows whose label is not target are ordered by their clean logit, the
// most confidently rejected first (the lowest logit for target 1, the
// highest for target 0; ties in row order), and cut into groups of
// near-equal size (row k of n, counted in that order, goes to group
// ⌊k·groups/n⌋); rate[g] is the share of group g whose triggered logit
// predicts target, as AttackSuccessRate counts it. A trigger that moves
// every row by the same logit fails first on the first group; a rate of 0
// there and 1 in the last groups says the trigger works only where the
// clean model is unsure. Fewer rows than groups: nil.
func AttackSuccessByConfidence(clean, trig []float32, labels []uint8, target uint8, groups int) ([]float64, error) {
	if len(clean) != len(labels) || len(trig) != len(labels) {
		return nil, fmt.Errorf("metrics: %d clean and %d triggered logits for %d labels", len(clean), len(trig), len(labels))
	}
	if target > 1 {
		return nil, fmt.Errorf("metrics: target class %d, want 0 or 1", target)
	}
	if groups < 1 {
		return nil, fmt.Errorf("metrics: %d groups, want at least 1", groups)
	}
	rows := make([]int, 0, len(labels))
	for i, y := range labels {
		if y != target {
			rows = append(rows, i)
		}
	}
	n := len(rows)
	if n < groups {
		return nil, nil
	}
	// sure reports whether row i is more confidently not of the target
	// class than row j.
	sure := func(i, j int) bool { return clean[i] < clean[j] }
	if target == 0 {
		sure = func(i, j int) bool { return clean[i] > clean[j] }
	}
	sort.SliceStable(rows, func(a, b int) bool { return sure(rows[a], rows[b]) })
	hit := make([]int, groups)
	size := make([]int, groups)
	for k, i := range rows {
		g := k * groups / n
		size[g]++
		if (trig[i] > 0) == (target == 1) {
			hit[g]++
		}
	}
	rate := make([]float64, groups)
	for g := range rate {
		rate[g] = float64(hit[g]) / float64(size[g])
	}
	return rate, nil
}
