package data

import (
	"fmt"
	"math"
)

// Key synth_shared_label ties the label to synth_shared's common factor,
// so that every party's columns carry the label through what they share
// (as parties describing the same labelled entity do). With r in (0, 1)
// the row draws its factor F ~ N(0, 1) first and then its label from the
// probit model
//
//	y = 1{L > c},  L = r·F + √(1−r²)·ε,  ε ~ N(0, 1),  c = Φ⁻¹(1 − p),
//
// p the positive rate: L is standard normal, so P(y = 1) = p exactly, and
// corr(F, L) = r. The label's point-biserial correlation with F is
// r·φ(c)/√(p(1−p)), and a column's latent normal X_j = √ρ·F + … has
// corr(X_j, L) = r√ρ, so P(X_j ≤ h, y = 0) = Φ₂(h, c; r√ρ). Given the
// label, the rest of the row is drawn as before (informative positives'
// tilts and shifts included), keeping F. r = 0 is synth_shared's table,
// byte for byte.

// labelTie is the probit tie of the label to the common factor.
type labelTie struct {
	r, own float64 // r and √(1−r²)
	cut    float64 // c = Φ⁻¹(1 − p)
}

// newLabelTie returns the tie of strength r for positive rate posRate on
// a table of shared share rho; nil for r = 0.
func newLabelTie(r, rho, posRate float64) (*labelTie, error) {
	if !(r >= 0 && r < 1) {
		return nil, fmt.Errorf("synth: the label's correlation %v with the shared factor outside [0, 1)", r)
	}
	if r == 0 {
		return nil, nil
	}
	if !(rho > 0) {
		return nil, fmt.Errorf("synth: a label tied to the shared factor (correlation %v) needs a positive shared share, got %v", r, rho)
	}
	return &labelTie{r: r, own: math.Sqrt(1 - r*r), cut: normQuantile(1 - posRate)}, nil
}

// positive is P(y = 1 | F = f) = Φ((r·f − c)/√(1−r²)).
func (t *labelTie) positive(f float64) float64 {
	return normCDF((t.r*f - t.cut) / t.own)
}

// normQuantile is Φ⁻¹.
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
