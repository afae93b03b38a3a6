package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeLongByHand checks DeLongPaired on five rows worked by hand with
// placement values (a tie between a positive and a negative of model a
// counts ½):
//
//	a: positives 0.8 0.6 0.4, negatives 0.4 0.3 → V10 = 1, 1, ¾;  V01 = ⅚, 1
//	b: positives 0.7 0.2 0.9, negatives 0.1 0.8 → V10 = ½, ½, 1;  V01 = 1, ⅓
//
// AUC a = 11/12, b = 2/3; S10 = [1/48, 1/12, −1/24], S01 = [1/72, 2/9,
// −1/18]; Var a = (1/48)/3 + (1/72)/2 = 1/72, Var b = (1/12)/3 + (2/9)/2 =
// 5/36, Var(a − b) = (1/48 + 1/12 + 1/12)/3 + (1/72 + 2/9 + 1/9)/2 = 17/72.
func TestDeLongByHand(t *testing.T) {
	labels := []uint8{1, 1, 1, 0, 0}
	a := []float64{0.8, 0.6, 0.4, 0.4, 0.3}
	b := []float64{0.7, 0.2, 0.9, 0.1, 0.8}
	p, err := DeLongPaired(a, b, labels)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"AUC a", p.A, 11.0 / 12}, {"AUC b", p.B, 2.0 / 3},
		{"Var a", p.VarA, 1.0 / 72}, {"Var b", p.VarB, 5.0 / 36}, {"Var(a − b)", p.VarDiff, 17.0 / 72},
		{"S10 ab", p.S10[2], -1.0 / 24}, {"S01 ab", p.S01[2], -1.0 / 18},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %.15g, want %.15g", c.name, c.got, c.want)
		}
	}
	// AUC a also by the exact AUC of auc.go.
	if auc, _ := AUC(a, labels, nil); math.Abs(auc-p.A) > 1e-12 {
		t.Errorf("AUC a %g, AUC() %g", p.A, auc)
	}
}

// placementDeLong is DeLong's variance of AUC(a) − AUC(b) in its O(m·n)
// form: every positive against every negative, ψ = 1, ½, 0.
func placementDeLong(a, b []float64, labels []uint8) (aucA, aucB, varDiff float64) {
	var pos, neg []int
	for i, l := range labels {
		if l == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	psi := func(x, y float64) float64 {
		switch {
		case x > y:
			return 1
		case x == y:
			return 0.5
		}
		return 0
	}
	m, n := len(pos), len(neg)
	d10, d01 := make([]float64, m), make([]float64, n)
	for i, pi := range pos {
		for j, nj := range neg {
			va, vb := psi(a[pi], a[nj]), psi(b[pi], b[nj])
			aucA += va
			aucB += vb
			d10[i] += (va - vb) / float64(n)
			d01[j] += (va - vb) / float64(m)
		}
	}
	aucA /= float64(m * n)
	aucB /= float64(m * n)
	variance := func(x []float64) float64 {
		mean := 0.0
		for _, v := range x {
			mean += v
		}
		mean /= float64(len(x))
		s := 0.0
		for _, v := range x {
			s += (v - mean) * (v - mean)
		}
		return s / float64(len(x)-1)
	}
	return aucA, aucB, variance(d10)/float64(m) + variance(d01)/float64(n)
}

// TestDeLongAgainstPlacements compares the midrank form with the O(m·n)
// placement form on random scores with many ties (rounded to a tenth).
func TestDeLongAgainstPlacements(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for _, c := range []struct{ rows, digits int }{{12, 1}, {57, 1}, {200, 2}, {301, 6}} {
		scale := math.Pow(10, float64(c.digits))
		labels := make([]uint8, c.rows)
		a, b := make([]float64, c.rows), make([]float64, c.rows)
		for i := range labels {
			labels[i] = uint8(i % 3 % 2)
			y := float64(labels[i])
			a[i] = math.Round((0.5*y+rng.Float64())*scale) / scale
			b[i] = math.Round((0.5*a[i]+0.3*y+0.5*rng.Float64())*scale) / scale
		}
		p, err := DeLongPaired(a, b, labels)
		if err != nil {
			t.Fatal(err)
		}
		wa, wb, wv := placementDeLong(a, b, labels)
		if math.Abs(p.A-wa) > 1e-12 || math.Abs(p.B-wb) > 1e-12 || math.Abs(p.VarDiff-wv) > 1e-12 {
			t.Errorf("%d rows: midranks %g %g %g, placements %g %g %g", c.rows, p.A, p.B, p.VarDiff, wa, wb, wv)
		}
	}
}

// TestDeLongCoversTheTrueDifference draws two correlated binormal models
// (positives N(μ, 1), negatives N(0, 1), the two models' scores of a row
// correlated ρ = 0.6), whose true AUCs are Φ(μ/√2): the 95% normal
// interval from DeLong's variance covers the true difference in about
// 95% of 2,000 samples of 60 positives and 90 negatives, and the mean
// variance is the spread of the differences over the samples. On one
// sample the paired bootstrap's 95% interval (AUCDiffBootstrap, a second
// method) is as wide as DeLong's within 15%.
func TestDeLongCoversTheTrueDifference(t *testing.T) {
	const reps, m, n, rho, muA, muB = 2000, 60, 90, 0.6, 1.0, 0.7
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	truth := phi(muA/math.Sqrt2) - phi(muB/math.Sqrt2)
	rng := rand.New(rand.NewPCG(29, 3))
	labels := make([]uint8, m+n)
	for i := range m {
		labels[i] = 1
	}
	a, b := make([]float64, m+n), make([]float64, m+n)
	draw := func() {
		for i := range labels {
			u, v := rng.NormFloat64(), rng.NormFloat64()
			a[i], b[i] = u, rho*u+math.Sqrt(1-rho*rho)*v
			if labels[i] == 1 {
				a[i] += muA
				b[i] += muB
			}
		}
	}
	covered, sumVar, sumD, sumD2 := 0, 0.0, 0.0, 0.0
	for range reps {
		draw()
		p, err := DeLongPaired(a, b, labels)
		if err != nil {
			t.Fatal(err)
		}
		d := p.A - p.B
		if math.Abs(d-truth) <= 1.959964*math.Sqrt(p.VarDiff) {
			covered++
		}
		sumVar += p.VarDiff
		sumD += d
		sumD2 += d * d
	}
	cover := float64(covered) / reps
	meanD := sumD / reps
	spread := (sumD2 - reps*meanD*meanD) / (reps - 1)
	t.Logf("coverage %.4f, mean DeLong variance %.3g, variance of the differences %.3g", cover, sumVar/reps, spread)
	if math.Abs(cover-0.95) > 0.015 { // three standard errors of a 95% proportion over 2,000
		t.Errorf("coverage %.4f, want 0.95 ± 0.015", cover)
	}
	if r := sumVar / reps / spread; r < 0.9 || r > 1.1 {
		t.Errorf("mean DeLong variance / variance of the differences = %.3f, want 1 ± 0.1", r)
	}
	draw()
	p, _ := DeLongPaired(a, b, labels)
	boot, err := AUCDiffBootstrap(a, b, labels, 4000, 0.95, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r := (boot.Hi - boot.Lo) / (2 * 1.959964 * math.Sqrt(p.VarDiff)); r < 0.85 || r > 1.15 {
		t.Errorf("paired bootstrap interval %.4f wide, DeLong's %.4f: ratio %.3f", boot.Hi-boot.Lo, 2*1.959964*math.Sqrt(p.VarDiff), r)
	}
}

// TestDeLongRefuses checks the errors: lengths, a class with one row, a
// score that is not finite.
func TestDeLongRefuses(t *testing.T) {
	for _, c := range []struct {
		name   string
		a, b   []float64
		labels []uint8
	}{
		{"lengths", []float64{1, 2, 3}, []float64{1, 2}, []uint8{1, 0, 1}},
		{"one positive", []float64{1, 2, 3}, []float64{1, 2, 3}, []uint8{1, 0, 0}},
		{"NaN", []float64{1, 2, math.NaN(), 4}, []float64{1, 2, 3, 4}, []uint8{1, 0, 1, 0}},
	} {
		if _, err := DeLongPaired(c.a, c.b, c.labels); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
