package data

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math"
	"testing"
)

// TestSynthSharedLabelClosedForm checks synth_shared_label against the
// probit model's closed forms, computed here without the generator's
// code (the bivariate normal by Simpson's rule): the positive rate p, the
// label's point-biserial correlation with the common factor,
// r·φ(c)/√(p(1−p)) with c = Φ⁻¹(1−p), and for a column outside every
// tilted group (I2, which informative positives draw unshifted, and C10)
// the probability of lying at or below a value within each class,
// Φ₂(h, c; r√ρ)/(1−p) for negatives and (Φ(h) − Φ₂(h, c; r√ρ))/p for
// positives, h = Φ⁻¹ of the column's own probability. A label not tied to
// the factor (r = 0) leaves each class at Φ(h).
func TestSynthSharedLabelClosedForm(t *testing.T) {
	inv := func(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }
	cdf := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	const rows, p, rho = 60000, 0.25, 0.5
	i2 := synthInts[1]
	events := []struct {
		name string
		h    float64
		in   func(r *synthRow) bool
	}{
		{"I2 ≤ 4", (math.Log(5) - i2.mu) / i2.sigma, func(r *synthRow) bool { return r.ints[1] <= 4 }},
		{"C10 ≤ 3", inv(zipfHead(synthCats[9].card, synthCats[9].s, 3)), func(r *synthRow) bool { return r.cats[9] <= 3 }},
	}
	for _, tie := range []float64{0, 0.7} {
		g, err := newSynth(p, 11)
		if err != nil {
			t.Fatal(err)
		}
		if g.common, err = newSynthCommon(rho); err != nil {
			t.Fatal(err)
		}
		if g.tie, err = newLabelTie(tie, rho, p); err != nil {
			t.Fatal(err)
		}
		var pos, sf, sff, sfy float64
		var in [2][2]float64 // [label][event]
		var r synthRow
		for range rows {
			g.next(&r)
			f, y := g.common.f, float64(r.label)
			pos += y
			sf += f
			sff += f * f
			sfy += f * y
			for e, ev := range events {
				if ev.in(&r) {
					in[r.label][e]++
				}
			}
		}
		n := float64(rows)
		gotP := pos / n
		mf, vf := sf/n, sff/n-(sf/n)*(sf/n)
		gotCorr := (sfy/n - mf*gotP) / math.Sqrt(vf*gotP*(1-gotP))
		c := inv(1 - p)
		wantCorr := tie * math.Exp(-c*c/2) / math.Sqrt(2*math.Pi) / math.Sqrt(p*(1-p))
		t.Logf("r %.1f: positive rate %.4f (want %.2f), corr(F, y) %.4f (want %.4f)", tie, gotP, p, gotCorr, wantCorr)
		if d := math.Abs(gotP - p); d > 4.5*math.Sqrt(p*(1-p)/n) {
			t.Errorf("r %.1f: positive rate %.4f, want %.2f", tie, gotP, p)
		}
		if d := math.Abs(gotCorr - wantCorr); d > 4.5/math.Sqrt(n) {
			t.Errorf("r %.1f: corr(F, y) %.4f, closed form %.4f", tie, gotCorr, wantCorr)
		}
		for e, ev := range events {
			joint := bivariateNormalCDF(ev.h, c, tie*math.Sqrt(rho))
			want := [2]float64{joint / (1 - p), (cdf(ev.h) - joint) / p}
			nc := [2]float64{n - pos, pos}
			for y := range 2 {
				got := in[y][e] / nc[y]
				se := math.Sqrt(want[y] * (1 - want[y]) / nc[y])
				t.Logf("r %.1f: P(%s | y=%d) %.4f (want %.4f ± %.4f; untied %.4f)", tie, ev.name, y, got, want[y], se, cdf(ev.h))
				if math.Abs(got-want[y]) > 4.5*se {
					t.Errorf("r %.1f: P(%s | y=%d) %.4f, closed form %.4f", tie, ev.name, y, got, want[y])
				}
			}
		}
	}
}

// TestSynthSharedLabelZeroIsTheSharedTable checks that a label not tied
// to the factor writes the bytes synth_shared wrote before the key
// existed (the hash of 3,000 rows at ρ 0.5, seed 7, recorded from the code
// before the change), that a tied label writes other rows, and that a
// correlation outside [0, 1) or a tie without a shared factor is refused.
func TestSynthSharedLabelZeroIsTheSharedTable(t *testing.T) {
	const before = "b59e549a77aca785676ea49b433e7d2a3b050218c8973748236c2b688513e8c1"
	for _, tie := range []float64{0, 0.5} {
		var b bytes.Buffer
		if err := WriteSynthTied(&b, 3000, 0.25, 0.5, tie, 7); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprintf("%x", sha256.Sum256(b.Bytes()))
		if (got == before) != (tie == 0) {
			t.Errorf("synth_shared_label %g: hash %s, the shared table's %s", tie, got, before)
		}
	}
	for _, c := range []struct{ shared, tie float64 }{{0.5, -0.1}, {0.5, 1}, {0.5, math.NaN()}, {0, 0.5}} {
		if err := WriteSynthTied(&bytes.Buffer{}, 10, 0.25, c.shared, c.tie, 7); err == nil {
			t.Errorf("synth_shared %g, synth_shared_label %g accepted", c.shared, c.tie)
		}
	}
	if _, err := GenerateTied(10, 0.25, 0, 0.5, 7, Options{}); err == nil {
		t.Error("GenerateTied accepted a tied label without a shared factor")
	}
}
