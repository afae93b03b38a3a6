package marvell

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/metrics"
)

// Design is a batch design for [Expect]: what a run's leak figures can be
// at best under Marvell's own model of the data, the setting of Theorem 2
// of [Li22]: the gradients of each class are Gaussian with isotropic
// within-class covariance, their means ‖Δ‖ apart. The problem is
// scale-invariant, so ‖Δ‖ = 1.
type Design struct {
	// S is Marvell's s: the noise power budget is P = s·‖Δ‖².
	S float64
	// Batch is the number of rows B per batch.
	Batch int
	// PosRate is the probability that a row is positive: a batch holds
	// Binomial(B, PosRate) positives.
	PosRate float64
	// Dim is the gradient dimension d.
	Dim int
	// Spread is each class's within-class variance (the trace of its
	// covariance) relative to ‖Δ‖²: u = v = Spread·‖Δ‖²/d per coordinate.
	// 0 is the limit of tightly clustered classes, the hardest case for
	// the protection.
	Spread float64
	// Batches is the number of simulated batches.
	Batches int
	// Seed seeds the simulation; the same Design gives the same result.
	Seed uint64
}

// Expectation is the result of [Expect] for a [Design].
type Expectation struct {
	Design
	// Nominal is Marvell's solution at the nominal positive fraction
	// p = PosRate.
	Nominal Solution
	// AUCBound is Theorem 1's worst-case leak-AUC bound at Nominal.SumKL.
	AUCBound float64
	// ProjectionAUC is the mean over the simulated batches of the
	// population AUC of the projection attacker (below), Φ(‖Δ‖/σ) with
	// σ² = λ₁⁽⁰⁾ + λ₁⁽¹⁾ + u + v at the batch's own positive fraction.
	ProjectionAUC float64
	// Mean, Q95 and Q95Abs summarise the simulated per-batch leak AUCs of
	// the projection attacker as a run's summary does (METHODS §2): the
	// mean, and the nearest-rank 95% quantiles of the AUC and of
	// |AUC − ½|.
	Mean, Q95, Q95Abs float64
	// ChanceQ95Abs is the q95 of |AUC − ½| that scores independent of the
	// labels give over the same batches ([metrics.ChanceQ95Abs]): the
	// floor set by the batch size alone.
	ChanceQ95Abs float64
	// Skipped counts the simulated batches of one class (no AUC).
	Skipped int
}

// Validate reports the first field of d that is out of range.
func (d Design) Validate() error {
	switch {
	case !(d.S > 0) || math.IsInf(d.S, 0):
		return fmt.Errorf("marvell: expect: s = %v, want a finite value > 0", d.S)
	case d.Batch < 2:
		return fmt.Errorf("marvell: expect: batch %d, want ≥ 2", d.Batch)
	case !(d.PosRate > 0 && d.PosRate < 1):
		return fmt.Errorf("marvell: expect: positive rate %v, want a value in (0, 1)", d.PosRate)
	case d.Dim < 1:
		return fmt.Errorf("marvell: expect: dimension %d, want ≥ 1", d.Dim)
	case !(d.Spread >= 0) || math.IsInf(d.Spread, 0):
		return fmt.Errorf("marvell: expect: spread %v, want a finite value ≥ 0", d.Spread)
	case d.Batches < 1:
		return fmt.Errorf("marvell: expect: %d batches, want ≥ 1", d.Batches)
	}
	return nil
}

// Expect simulates the per-batch leak AUC of the strongest direction
// attack on Marvell-protected gradients for a batch design, under
// Marvell's own model of the data (see [Design]).
//
// Per batch: the number of positives n₁ is drawn from Binomial(B, p); a
// batch of one class is skipped, as a run skips it. Marvell is solved at
// p̂ = n₁/B with u = v = Spread/d, g = 1, P = s; its noise leaves the
// classes separated only along Δ, where positives are N(1, λ₁⁽¹⁾ + v) and
// negatives N(0, λ₁⁽⁰⁾ + u). The attacker scores each row by its
// projection on Δ — what the oracle cosine attack amounts to once the
// noise along Δ dominates the spread (experiments/results.md §3.2) — and
// the batch's leak AUC is the exact AUC of those scores.
//
// The result is a reference for reading a run's figures, not a bound:
// real gradients are not Gaussian, and within-class spread along Δ
// (Spread > 0) only lowers the leak.
func Expect(d Design) (Expectation, error) {
	if err := d.Validate(); err != nil {
		return Expectation{}, err
	}
	pr := Problem{U: d.Spread / float64(d.Dim), V: d.Spread / float64(d.Dim), D: d.Dim, G: 1, Pos: d.PosRate, Power: d.S}
	nominal := solveValid(pr)
	e := Expectation{Design: d, Nominal: nominal, AUCBound: AUCBound(nominal.SumKL)}

	rng := rand.New(rand.NewPCG(d.Seed, 0x6d617276656c6c)) // "marvell"
	scores := make([]float64, d.Batch)
	labels := make([]uint8, d.Batch)
	aucs := make([]float64, 0, d.Batches)
	counts := make([]metrics.Composition, 0, d.Batches)
	var sc metrics.Scratch
	var projection float64
	for range d.Batches {
		pos := 0
		for i := range labels {
			labels[i] = 0
			if rng.Float64() < d.PosRate {
				labels[i] = 1
				pos++
			}
		}
		if pos == 0 || pos == d.Batch {
			e.Skipped++
			continue
		}
		pr.Pos = float64(pos) / float64(d.Batch)
		s := solveValid(pr)
		sd1, sd0 := math.Sqrt(s.Lam11+pr.V), math.Sqrt(s.Lam10+pr.U)
		for i, y := range labels {
			if y == 1 {
				scores[i] = 1 + sd1*rng.NormFloat64()
			} else {
				scores[i] = sd0 * rng.NormFloat64()
			}
		}
		auc, _ := sc.AUC(scores, labels, nil)
		aucs = append(aucs, auc)
		counts = append(counts, metrics.Composition{Pos: pos, Neg: d.Batch - pos})
		projection += normalCDF(1 / math.Hypot(sd0, sd1))
	}
	if len(aucs) == 0 {
		return e, errors.New("marvell: expect: every simulated batch held one class only; raise the batch size or the batch count")
	}
	n := float64(len(aucs))
	e.ProjectionAUC = projection / n
	var sum float64
	abs := make([]float64, len(aucs))
	for i, a := range aucs {
		sum += a
		abs[i] = math.Abs(a - 0.5)
	}
	e.Mean = sum / n
	slices.Sort(aucs)
	slices.Sort(abs)
	e.Q95, _ = metrics.QuantileSorted(aucs, 0.95)
	e.Q95Abs, _ = metrics.QuantileSorted(abs, 0.95)
	e.ChanceQ95Abs = metrics.ChanceQ95Abs(counts)
	return e, nil
}

// normalCDF is Φ, the standard normal distribution function.
func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
