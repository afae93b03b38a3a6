package marvell

import (
	"math"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
)

func TestExpectClosedForms(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	for _, c := range []struct {
		name string
		d    Design
		// want is the hand-derived projection AUC. At p = ½ the problem
		// is symmetric in the classes, so λ₁⁽⁰⁾ = λ₁⁽¹⁾ and the budget
		// ½λ₁⁽⁰⁾ + ½λ₁⁽¹⁾ = s gives λ₁ = s each: AUC = Φ(1/√(2s + u + v)).
		want float64
	}{
		{"tight classes, s=4", Design{S: 4, Batch: 1024, PosRate: 0.5, Dim: 128, Batches: 400, Seed: 1}, phi(1 / math.Sqrt(8))},
		{"tight classes, s=1", Design{S: 1, Batch: 1024, PosRate: 0.5, Dim: 128, Batches: 400, Seed: 2}, phi(1 / math.Sqrt(2))},
		// d = 1: u = v = Spread = 1, no orthogonal direction.
		{"spread 1 in one dimension, s=4", Design{S: 4, Batch: 1024, PosRate: 0.5, Dim: 1, Spread: 1, Batches: 400, Seed: 3}, phi(1 / math.Sqrt(10))},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := Expect(c.d)
			if err != nil {
				t.Fatal(err)
			}
			// The batches' positive fractions wander around ½ by ±1.6%,
			// which moves the λ's and the AUC by far less than 0.002.
			if math.Abs(e.ProjectionAUC-c.want) > 0.002 {
				t.Errorf("projection AUC %.5f, want %.5f", e.ProjectionAUC, c.want)
			}
			// Per batch the AUC's sd is about 0.018; the mean of 400 has
			// sd 0.0009.
			if math.Abs(e.Mean-c.want) > 0.005 {
				t.Errorf("simulated mean AUC %.5f, want %.5f", e.Mean, c.want)
			}
			if e.Q95 < e.Mean || e.Q95Abs < e.Q95-0.5-1e-12 {
				t.Errorf("q95 %.4f, q95_abs %.4f inconsistent with the mean %.4f", e.Q95, e.Q95Abs, e.Mean)
			}
		})
	}
}

// TestExpectChanceFloor checks the simulation against the independent
// chance floor: with an overwhelming budget the protected scores carry no
// label information, so the simulated q95 |AUC − ½| is the chance
// quantile of the same batch design.
func TestExpectChanceFloor(t *testing.T) {
	for _, d := range []Design{
		{S: 1e8, Batch: 1024, PosRate: 0.25, Dim: 128, Batches: 2000, Seed: 4},
		{S: 1e8, Batch: 128, PosRate: 0.1, Dim: 1600, Batches: 2000, Seed: 5},
	} {
		e, err := Expect(d)
		if err != nil {
			t.Fatal(err)
		}
		// The floor of 1024 rows at 25% is 1.96·√(1025/(12·256·768)) ≈
		// 0.041 (a fixed composition, computed by hand); the batch design
		// adds binomial variation of the composition, which changes it
		// very little.
		if d.Batch == 1024 && math.Abs(e.ChanceQ95Abs-0.0409) > 0.001 {
			t.Errorf("chance floor %.4f at 1024 rows, 25%%: want ≈ 0.0409", e.ChanceQ95Abs)
		}
		// The empirical 95% quantile of 2000 draws has sd ≈ 0.0015 (1024
		// rows) and ≈ 0.004 (128 rows).
		tol := 0.006
		if d.Batch == 128 {
			tol = 0.015
		}
		if math.Abs(e.Q95Abs-e.ChanceQ95Abs) > tol {
			t.Errorf("batch %d: simulated q95 |AUC−½| %.4f, chance floor %.4f (tolerance %.3f)", d.Batch, e.Q95Abs, e.ChanceQ95Abs, tol)
		}
		if math.Abs(e.ProjectionAUC-0.5) > 1e-3 {
			t.Errorf("projection AUC %.5f with s = 1e8, want ≈ ½", e.ProjectionAUC)
		}
	}
}

func TestExpectDeterministicAndSkips(t *testing.T) {
	d := Design{S: 4, Batch: 8, PosRate: 0.1, Dim: 4, Batches: 300, Seed: 9}
	a, err := Expect(d)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Expect(d)
	if a != b {
		t.Errorf("same design, different results:\n%+v\n%+v", a, b)
	}
	// P(no positive among 8 at 10%) = 0.9⁸ = 0.430: about 129 of 300
	// batches are skipped (sd 8.6).
	if a.Skipped < 90 || a.Skipped > 170 {
		t.Errorf("skipped %d of 300 one-class batches, want about 129", a.Skipped)
	}
	if ch := metrics.ChanceQ95Abs([]metrics.Composition{{Pos: 1, Neg: 7}}); !(a.ChanceQ95Abs <= 0.5 && ch == 0.5) {
		// One positive among 8: A is uniform on {0, 1/7, …, 1}, so
		// |A − ½| = ½ with probability ¼ > 0.05, and the floor is ½.
		t.Errorf("chance floors %v (mixture), %v (one positive among 8), want ≤ ½ and ½", a.ChanceQ95Abs, ch)
	}
	if _, err := Expect(Design{S: 4, Batch: 2, PosRate: 1e-9, Dim: 1, Batches: 5, Seed: 1}); err == nil ||
		!strings.Contains(err.Error(), "one class") {
		t.Errorf("all batches one-class: err %v, want a one-class error", err)
	}
}

func TestExpectValidate(t *testing.T) {
	ok := Design{S: 4, Batch: 128, PosRate: 0.1, Dim: 16, Batches: 10}
	for _, c := range []struct {
		name string
		mod  func(*Design)
		want string
	}{
		{"s zero", func(d *Design) { d.S = 0 }, "s = 0"},
		{"s NaN", func(d *Design) { d.S = math.NaN() }, "s = NaN"},
		{"s inf", func(d *Design) { d.S = math.Inf(1) }, "s = +Inf"},
		{"batch 1", func(d *Design) { d.Batch = 1 }, "batch 1"},
		{"rate 0", func(d *Design) { d.PosRate = 0 }, "positive rate 0"},
		{"rate 1", func(d *Design) { d.PosRate = 1 }, "positive rate 1"},
		{"dim 0", func(d *Design) { d.Dim = 0 }, "dimension 0"},
		{"spread negative", func(d *Design) { d.Spread = -1 }, "spread -1"},
		{"no batches", func(d *Design) { d.Batches = 0 }, "0 batches"},
	} {
		d := ok
		c.mod(&d)
		_, err := Expect(d)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := Expect(ok); err != nil {
		t.Errorf("valid design: %v", err)
	}
}
