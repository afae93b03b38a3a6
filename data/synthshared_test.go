package data

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"testing"
)

// bivariateNormalCDF is Φ₂(h, k; ρ) = ∫_{−∞}^{h} φ(x)·Φ((k − ρx)/√(1−ρ²)) dx
// by Simpson's rule (ρ < 1), written here independently of the generator.
func bivariateNormalCDF(h, k, rho float64) float64 {
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	f := func(x float64) float64 { return phi(x) * cdf((k-rho*x)/math.Sqrt(1-rho*rho)) }
	const n = 4000
	a := -12.0
	step := (h - a) / n
	sum := f(a) + f(h)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		sum += w * f(a+float64(i)*step)
	}
	return sum * step / 3
}

// zipfHead is P(value ≤ k) of a column with P(k) ∝ (1+k)^(−s), k < card,
// summed here independently of the generator's table.
func zipfHead(card int, s float64, k int) float64 {
	var num, den float64
	for i := range card {
		p := math.Pow(float64(i+1), -s)
		den += p
		if i <= k {
			num += p
		}
	}
	return num / den
}

// TestSynthSharedCorrelation checks synth_shared's joint distribution
// against the Gaussian copula's closed form: over the negative rows, the
// probability that two columns (categorical, integer, or one of each, in
// different passive parties' hands under synth_parties) both lie at or
// below a value is Φ₂(Φ⁻¹(p_a), Φ⁻¹(p_b); ρ), with p_a, p_b the columns'
// own probabilities, which ρ does not change.
func TestSynthSharedCorrelation(t *testing.T) {
	inv := func(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
	// An integer column is ⌊exp(μ + σx)⌋ ≤ t ⟺ x < (ln(t+1) − μ)/σ.
	intProb := func(j int, t float64) float64 {
		s := synthInts[j]
		return 0.5 * math.Erfc(-((math.Log(t+1)-s.mu)/s.sigma)/math.Sqrt2)
	}
	type event struct {
		name string
		p    float64
		in   func(r *synthRow) (ok, below bool)
	}
	catAt := func(j, k int) event {
		return event{fmt.Sprintf("C%d ≤ %d", j+1, k), zipfHead(synthCats[j].card, synthCats[j].s, k),
			func(r *synthRow) (bool, bool) { return r.cats[j] >= 0, r.cats[j] <= int64(k) }}
	}
	intAt := func(j int, t float64) event {
		return event{fmt.Sprintf("I%d ≤ %g", j+1, t), intProb(j, t),
			func(r *synthRow) (bool, bool) { return r.ints[j] >= 0, float64(r.ints[j]) <= t }}
	}
	pairs := [][2]event{
		{catAt(8, 0), catAt(19, 0)}, // C9, C20
		{intAt(1, 4), intAt(7, 9)},  // I2, I8
		{catAt(16, 1), intAt(1, 4)}, // C17, I2
		{catAt(2, 10), catAt(9, 3)}, // C3, C10: 100,000 and 93,145 values
	}
	const rows = 40000
	for _, rho := range []float64{0, 0.6} {
		g, err := newSynth(0.25, 3)
		if err != nil {
			t.Fatal(err)
		}
		if g.common, err = newSynthCommon(rho); err != nil {
			t.Fatal(err)
		}
		for _, pr := range pairs {
			a, b := pr[0], pr[1]
			var n, na, nb, nab float64
			var r synthRow
			for range rows {
				g.next(&r)
				okA, inA := a.in(&r)
				okB, inB := b.in(&r)
				if r.label != 0 || !okA || !okB {
					continue
				}
				n++
				if inA {
					na++
				}
				if inB {
					nb++
				}
				if inA && inB {
					nab++
				}
			}
			want := bivariateNormalCDF(inv(a.p), inv(b.p), rho)
			se := math.Sqrt(want * (1 - want) / n)
			t.Logf("ρ %.1f: P(%s) %.4f (want %.4f), P(%s) %.4f (want %.4f), both %.4f (want %.4f, ±%.4f; independent %.4f), %0.f rows",
				rho, a.name, na/n, a.p, b.name, nb/n, b.p, nab/n, want, se, a.p*b.p, n)
			for _, c := range []struct {
				what      string
				got, want float64
			}{{a.name, na / n, a.p}, {b.name, nb / n, b.p}, {"both", nab / n, want}} {
				if d := math.Abs(c.got - c.want); d > 4.5*math.Sqrt(c.want*(1-c.want)/n) {
					t.Errorf("ρ %.1f, %s and %s: P(%s) %.4f, closed form %.4f", rho, a.name, b.name, c.what, c.got, c.want)
				}
			}
		}
	}
}

// TestSynthSharedZeroIsTheIndependentTable checks that synth_shared 0
// writes the bytes the generator wrote before the key existed (the hash
// of 3,000 rows, seed 7, recorded from the code before the change), that
// a positive share writes other rows, and that a share outside [0, 1] is
// refused.
func TestSynthSharedZeroIsTheIndependentTable(t *testing.T) {
	const before = "bee0e47613bd8674ed17cda885afb350c3c3afe94685b7ac5804af0430ae1419"
	for _, rho := range []float64{0, 0.5} {
		var b bytes.Buffer
		if err := WriteSynthShared(&b, 3000, 0.25, rho, 7); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))
		if (got == before) != (rho == 0) {
			t.Errorf("synth_shared %g: hash %s, the independent table's %s", rho, got, before)
		}
	}
	for _, rho := range []float64{-0.1, 1.5, math.NaN()} {
		if err := WriteSynthShared(&bytes.Buffer{}, 10, 0.25, rho, 7); err == nil {
			t.Errorf("synth_shared %g accepted", rho)
		}
	}
}
