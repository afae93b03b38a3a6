package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// synthCommon, the key synth_shared of a synthetic table, correlates
// its columns as vertically split data describing the same rows is
// correlated: every row draws one latent factor F ~ N(0, 1) common to all
// columns, and column j's value comes from the latent normal
//
//	X_j = √ρ·F + √(1−ρ)·Z_j,  Z_j ~ N(0, 1) of its own,
//
// through the column's own distribution (a Gaussian copula): an integer
// column is ⌊exp(μ_j + σ_j·X_j)⌋, a categorical column the Zipf value k
// whose cumulative probability first reaches Φ(X_j). Each column's
// marginal distribution, NA draws and the label's tilt are those of the
// independent table; two columns' latent normals have correlation ρ, so
// that P(value of a ≤ k_a, value of b ≤ k_b) = Φ₂(Φ⁻¹(P_a(k_a)),
// Φ⁻¹(P_b(k_b)); ρ) between non-NA values of negative rows. ρ = 0 is the
// independent table, byte for byte.
//
// A tilted group's rejection sampling redraws Z_j and keeps the row's F.
type synthCommon struct {
	rng       *rand.Rand
	load, own float64 // √ρ and √(1−ρ)
	f         float64 // the row's factor
	cdf       [criteoCat][]float64
}

// newSynthCommon returns the shared-factor draw of share rho, nil for 0
// (the independent draw).
func newSynthCommon(rho float64) (*synthCommon, error) {
	if !(rho >= 0 && rho <= 1) {
		return nil, fmt.Errorf("synth: shared latent share %v outside [0, 1]", rho)
	}
	if rho == 0 {
		return nil, nil
	}
	c := &synthCommon{load: math.Sqrt(rho), own: math.Sqrt(1 - rho)}
	for j, s := range synthCats {
		c.cdf[j] = zipfCDF(s.card, s.s)
	}
	return c, nil
}

// zipfCDF is the cumulative distribution of P(k) ∝ (1+k)^(−s), k < card
// (math/rand's Zipf with v = 1).
func zipfCDF(card int, s float64) []float64 {
	out := make([]float64, card)
	sum := 0.0
	for k := range out {
		sum += math.Pow(1+float64(k), -s)
		out[k] = sum
	}
	for k := range out {
		out[k] /= sum
	}
	out[card-1] = 1
	return out
}

// drawFactor draws the row's common factor from rng (nothing when c is
// nil: the independent draw takes no extra number).
func (c *synthCommon) drawFactor(rng *rand.Rand) {
	if c == nil {
		return
	}
	c.rng = rng
	c.f = rng.NormFloat64()
}

// latent is a column's latent normal √ρ·F + √(1−ρ)·Z.
func (c *synthCommon) latent() float64 {
	return c.load*c.f + c.own*c.rng.NormFloat64()
}

// cat draws a value of categorical column j.
func (g *synth) cat(j int) int64 {
	c := g.common
	if c == nil {
		return int64(g.zipf[j].Uint64())
	}
	u := normCDF(c.latent())
	cdf := c.cdf[j]
	return int64(min(sort.SearchFloat64s(cdf, u), len(cdf)-1))
}

// normal draws an integer column's standard normal.
func (g *synth) normal() float64 {
	if g.common == nil {
		return g.rng.NormFloat64()
	}
	return g.common.latent()
}

// normCDF is Φ, the standard normal distribution function.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
