package marvell_test

import (
	"fmt"
	"log"

	"github.com/splitguard/splitguard/marvell"
)

// Solve finds the noise that hides the label best within a power budget.
// The cut-layer gradients of a batch have per-coordinate variance 1 among
// the negatives and 2 among the positives, in d = 8 dimensions, with the
// class means ‖Δ‖² = 4 apart and 25% positives; the noise may add power
// P = 3 (expected squared norm per example). The solution spends the whole
// budget, and the leak-AUC bound of Theorem 1 drops from vacuous (1, for
// sumKL = ((d−1)(u/v+v/u) + (u+g)/v + (v+g)/u)/2 − d = 5 before) to 0.96.
func ExampleSolve() {
	pr := marvell.Problem{U: 1, V: 2, D: 8, G: 4, Pos: 0.25, Power: 3}
	s, err := marvell.Solve(pr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("negatives: λ₁ = %.4f along Δ, λ₂ = %.4f across\n", s.Lam10, s.Lam20)
	fmt.Printf("positives: λ₁ = %.4f along Δ, λ₂ = %.4f across\n", s.Lam11, s.Lam21)
	d := float64(pr.D - 1)
	used := pr.Pos*(s.Lam11+d*s.Lam21) + (1-pr.Pos)*(s.Lam10+d*s.Lam20)
	fmt.Printf("power used: %.4f of %v\n", used, pr.Power)
	before := marvell.SumKLBefore(pr)
	fmt.Printf("sumKL %.4f → %.4f, leak AUC bound %.4f → %.4f\n", before, s.SumKL, marvell.AUCBound(before), marvell.AUCBound(s.SumKL))
	// Output:
	// negatives: λ₁ = 1.6500 along Δ, λ₂ = 0.2751 across
	// positives: λ₁ = 1.2731 along Δ, λ₂ = 0.0000 across
	// power used: 3.0000 of 3
	// sumKL 5.0000 → 2.1094, leak AUC bound 1.0000 → 0.9625
}
