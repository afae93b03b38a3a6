package marvell

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// budget returns the left-hand side of the power constraint.
func budget(pr Problem, s Solution) float64 {
	p, q, dm := pr.Pos, 1-pr.Pos, float64(pr.D-1)
	return p*s.Lam11 + p*dm*s.Lam21 + q*s.Lam10 + q*dm*s.Lam20
}

// checkFeasible fails t unless s is a feasible point with the constraint
// active (relative 1e-10) and no NaN.
func checkFeasible(t *testing.T, name string, pr Problem, s Solution) {
	t.Helper()
	for _, x := range []float64{s.Lam10, s.Lam20, s.Lam11, s.Lam21, s.SumKL} {
		if math.IsNaN(x) || x < 0 || math.IsInf(x, 0) {
			t.Fatalf("%s: %+v → bad value in %+v", name, pr, s)
		}
	}
	if s.Lam20 > s.Lam10 || s.Lam21 > s.Lam11 {
		t.Fatalf("%s: ordering violated: %+v", name, s)
	}
	if b := budget(pr, s); math.Abs(b-pr.Power) > 1e-10*pr.Power {
		t.Fatalf("%s: budget %v, want P = %v (equality)", name, b, pr.Power)
	}
}

func randomProblem(rng *rand.Rand, dims []int) Problem {
	return Problem{
		U: rng.ExpFloat64(), V: rng.ExpFloat64(), D: dims[rng.IntN(len(dims))],
		G: 3 * rng.ExpFloat64(), Pos: 0.02 + 0.96*rng.Float64(), Power: 4 * rng.ExpFloat64(),
	}
}

func TestClosedFormUV0(t *testing.T) {
	// Hand-derived: u = v = 0, g = 1, P = 1, p = ½ gives k = 1, r = 1,
	// λ₁⁰ = λ₁¹ = 1, objective − 2d = 2·sqrt(1.5·1.5) + 1 − 2 = 2, sumKL = 1.
	// The others use the closed form of the doc comment, evaluated here
	// independently, and are checked against brute force too.
	cases := []struct {
		g, p, P   float64
		d         int
		l10, l11  float64
		sumKL     float64
		checkGrid bool
	}{
		{1, 0.5, 1, 1, 1, 1, 1, false},
		{1, 0.5, 1, 64, 1, 1, 1, false},
	}
	for _, c := range []struct{ g, p, P float64 }{{1, 0.2, 1}, {5, 0.9, 0.5}, {0.01, 0.3, 7}} {
		k := c.g / c.P
		r := math.Sqrt((1 + k*c.p) / (1 + k*(1-c.p)))
		l11 := c.P / ((1-c.p)*r + c.p)
		cases = append(cases, struct {
			g, p, P   float64
			d         int
			l10, l11  float64
			sumKL     float64
			checkGrid bool
		}{c.g, c.p, c.P, 3, r * l11, l11, (2*math.Sqrt((1+k*c.p)*(1+k*(1-c.p))) + k - 2) / 2, true})
	}
	for _, c := range cases {
		pr := Problem{D: c.d, G: c.g, Pos: c.p, Power: c.P}
		s, err := Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, "uv0", pr, s)
		if math.Abs(s.Lam10-c.l10) > 1e-12*c.l10 || math.Abs(s.Lam11-c.l11) > 1e-12*c.l11 || s.Lam20 != 0 || s.Lam21 != 0 {
			t.Errorf("%+v: λ = %+v, want λ₁⁰ = %v, λ₁¹ = %v", pr, s, c.l10, c.l11)
		}
		if math.Abs(s.SumKL-c.sumKL) > 1e-12*c.sumKL {
			t.Errorf("%+v: sumKL %v, want %v", pr, s.SumKL, c.sumKL)
		}
		if c.checkGrid {
			f := Objective(pr, s.Lam10, s.Lam20, s.Lam11, s.Lam21)
			if bf := bruteForce(pr, 60); bf < f*(1-1e-12) {
				t.Errorf("%+v: grid %v beats closed form %v", pr, bf, f)
			}
		}
	}
}

func TestSumKLBeforeAndBounds(t *testing.T) {
	// ((d−1)(u/v+v/u) + (u+g)/v + (v+g)/u)/2 − d by hand:
	// u=1, v=2, d=3, g=1: (2·2.5 + 1 + 3)/2 − 3 = 1.5.
	// u=v=1, d=10, g=2: (9·2 + 3 + 3)/2 − 10 = 2.
	cases := []struct {
		pr   Problem
		want float64
	}{
		{Problem{U: 1, V: 2, D: 3, G: 1, Pos: 0.5}, 1.5},
		{Problem{U: 1, V: 1, D: 10, G: 2, Pos: 0.5}, 2},
		{Problem{U: 0, V: 1, D: 3, G: 1, Pos: 0.5}, InfSumKL},
		{Problem{U: 1, V: 0, D: 1, G: 0, Pos: 0.5}, InfSumKL},
		{Problem{U: 0, V: 0, D: 5, G: 1, Pos: 0.5}, InfSumKL},
		{Problem{U: 0, V: 0, D: 5, G: 0, Pos: 0.5}, 0},
	}
	for _, c := range cases {
		if got := SumKLBefore(c.pr); math.Abs(got-c.want) > 1e-14*math.Max(1, c.want) && got != c.want {
			t.Errorf("SumKLBefore(%+v) = %v, want %v", c.pr, got, c.want)
		}
	}
	bounds := []struct{ eps, err, auc float64 }{
		{0, 0.5, 0.5},
		{0.16, 0.4, 0.5 + 0.2 - 0.02},
		{1, 0.25, 0.875},
		{4, 0, 1},
		{9, 0, 1},
		{InfSumKL, 0, 1},
	}
	for _, b := range bounds {
		if got := ErrorLowerBound(b.eps); math.Abs(got-b.err) > 1e-15 {
			t.Errorf("ErrorLowerBound(%v) = %v, want %v", b.eps, got, b.err)
		}
		if got := AUCBound(b.eps); math.Abs(got-b.auc) > 1e-15 {
			t.Errorf("AUCBound(%v) = %v, want %v", b.eps, got, b.auc)
		}
	}
	// The technical report: error 40% needs sumKL ≤ 0.16, 30% needs ≤ 0.64.
	for _, c := range []struct{ l, tau float64 }{{0.4, 0.16}, {0.3, 0.64}, {0.5, 0}, {0, 4}} {
		if got := TargetSumKL(c.l); math.Abs(got-c.tau) > 1e-15 {
			t.Errorf("TargetSumKL(%v) = %v, want %v", c.l, got, c.tau)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Problem{U: 1, V: 1, D: 2, G: 1, Pos: 0.5, Power: 1}
	bad := map[string]func(*Problem){
		"u negative": func(p *Problem) { p.U = -1 },
		"v NaN":      func(p *Problem) { p.V = math.NaN() },
		"g Inf":      func(p *Problem) { p.G = math.Inf(1) },
		"P negative": func(p *Problem) { p.Power = -1e-30 },
		"d zero":     func(p *Problem) { p.D = 0 },
		"p zero":     func(p *Problem) { p.Pos = 0 },
		"p one":      func(p *Problem) { p.Pos = 1 },
		"p NaN":      func(p *Problem) { p.Pos = math.NaN() },
	}
	for name, mut := range bad {
		pr := ok
		mut(&pr)
		if _, err := Solve(pr); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := Solve(ok); err != nil {
		t.Fatal(err)
	}
}

func TestEdgeCases(t *testing.T) {
	// P = 0: no noise allowed.
	pr := Problem{U: 1, V: 2, D: 4, G: 3, Pos: 0.3}
	s, _ := Solve(pr)
	if s.Lam10 != 0 || s.Lam20 != 0 || s.Lam11 != 0 || s.Lam21 != 0 || s.SumKL != SumKLBefore(pr) {
		t.Errorf("P = 0: %+v", s)
	}
	cases := []Problem{
		{U: 1, V: 2, D: 1, G: 3, Pos: 0.3, Power: 2},          // d = 1
		{U: 2, V: 1, D: 1, G: 3, Pos: 0.3, Power: 2},          // d = 1, swapped
		{U: 1e-3, V: 2e-3, D: 128, G: 1, Pos: 1e-9, Power: 4}, // p near 0
		{U: 1e-3, V: 2e-3, D: 128, G: 1, Pos: 1 - 1e-9, Power: 4},
		{U: 2e-3, V: 1e-3, D: 128, G: 1, Pos: 1e-9, Power: 4},
		{U: 0, V: 1, D: 128, G: 2, Pos: 0.3, Power: 1}, // one class without variance
		{U: 1, V: 0, D: 128, G: 2, Pos: 0.3, Power: 1},
		{U: 5, V: 2, D: 128, G: 0, Pos: 0.25, Power: 1}, // ‖Δ‖² = 0
		{U: 5, V: 5, D: 128, G: 0, Pos: 0.25, Power: 1},
		{U: 1, V: 2, D: 128, G: 1, Pos: 0.25, Power: 1e12}, // huge budget
		{U: 1, V: 2, D: 128, G: 1, Pos: 0.25, Power: 1e-12},
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, pr := range cases {
		s, err := Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, "edge", pr, s)
		if pr.D == 1 && (s.Lam20 != 0 || s.Lam21 != 0) {
			t.Errorf("d = 1: λ₂ = %v, %v, want 0", s.Lam20, s.Lam21)
		}
		f := Objective(pr, s.Lam10, s.Lam20, s.Lam11, s.Lam21)
		if nm := nmRestarts(pr, rng, 6); nm < f*(1-1e-9) {
			t.Errorf("%+v: Nelder–Mead %v beats %v", pr, nm, f)
		}
		if alt := alternating(pr, rng); alt < f*(1-1e-9) {
			t.Errorf("%+v: alternating %v beats %v", pr, alt, f)
		}
	}
}

func TestBruteForceNeverBetter(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 1))
	n := 36
	if testing.Short() {
		n = 20
	}
	for i := range 12 {
		pr := randomProblem(rng, []int{1, 2, 3, 6})
		s, err := Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, fmt.Sprint("case ", i), pr, s)
		f := Objective(pr, s.Lam10, s.Lam20, s.Lam11, s.Lam21)
		if bf := bruteForce(pr, n); bf < f*(1-1e-12) {
			t.Errorf("%+v: grid %.15g beats solver %.15g", pr, bf, f)
		}
	}
}

func TestRandomRestartsNeverBetter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	cases := 60
	if testing.Short() {
		cases = 15
	}
	for range cases {
		pr := randomProblem(rng, []int{1, 2, 5, 32, 128})
		s, err := Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, "restart", pr, s)
		f := Objective(pr, s.Lam10, s.Lam20, s.Lam11, s.Lam21)
		if nm := nmRestarts(pr, rng, 4); nm < f*(1-1e-9) {
			t.Errorf("%+v: Nelder–Mead %.15g beats %.15g", pr, nm, f)
		}
		if alt := alternating(pr, rng); alt < f*(1-1e-9) {
			t.Errorf("%+v: alternating %.15g beats %.15g", pr, alt, f)
		}
	}
}

// kktResidual returns the relative stationarity residual and the most
// negative inequality multiplier at s, from a least-squares fit of the
// multipliers of the active constraints.
func kktResidual(pr Problem, s Solution) (res, minMult float64) {
	u, v, g, p, q, dm := pr.U, pr.V, pr.G, pr.Pos, 1-pr.Pos, float64(pr.D-1)
	w := [4]float64{s.Lam10, s.Lam20, s.Lam11, s.Lam21}
	a, b := w[0]+u, w[2]+v
	grad := [4]float64{1/b - (b+g)/(a*a), 0, 1/a - (a+g)/(b*b), 0}
	nv := 4
	if pr.D > 1 {
		c, e := w[1]+u, w[3]+v
		grad[1] = dm * (1/e - e/(c*c))
		grad[3] = dm * (1/c - c/(e*e))
	} else {
		nv = 0 // only λ₁'s matter: rows 0 and 2
	}
	cons := [][4]float64{{q, q * dm, p, p * dm}} // budget (multiplier μ ≥ 0)
	scale := math.Max(math.Max(w[0], w[2]), pr.Power)
	tol := 1e-9 * scale
	for i := range 4 {
		if (pr.D > 1 || i == 0 || i == 2) && w[i] <= tol {
			var c [4]float64
			c[i] = -1
			cons = append(cons, c)
		}
	}
	if pr.D > 1 {
		if w[1] >= w[0]-tol && w[0] > tol {
			cons = append(cons, [4]float64{-1, 1, 0, 0})
		}
		if w[3] >= w[2]-tol && w[2] > tol {
			cons = append(cons, [4]float64{0, 0, -1, 1})
		}
	}
	rows := []int{0, 2}
	if nv == 4 {
		rows = []int{0, 1, 2, 3}
	}
	A := mat.NewDense(len(rows), len(cons), nil)
	rhs := mat.NewVecDense(len(rows), nil)
	var gnorm float64
	for r, i := range rows {
		for j, c := range cons {
			A.Set(r, j, c[i])
		}
		rhs.SetVec(r, -grad[i])
		gnorm = math.Max(gnorm, math.Abs(grad[i]))
	}
	var x mat.VecDense
	if err := x.SolveVec(A, rhs); err != nil {
		return math.Inf(1), 0
	}
	var r mat.VecDense
	r.MulVec(A, &x)
	r.SubVec(&r, rhs)
	minMult = math.Inf(1)
	for j := range cons {
		minMult = math.Min(minMult, x.AtVec(j)/gnorm)
	}
	return mat.Norm(&r, math.Inf(1)) / gnorm, minMult
}

func TestKKT(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for i := range 200 {
		pr := randomProblem(rng, []int{1, 2, 7, 128})
		s, err := Solve(pr)
		if err != nil {
			t.Fatal(err)
		}
		res, mm := kktResidual(pr, s)
		if res > 1e-6 || mm < -1e-6 {
			t.Errorf("case %d %+v → %+v: KKT residual %.3g, min multiplier %.3g", i, pr, s, res, mm)
		}
	}
}

func TestScaleInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for range 20 {
		base := randomProblem(rng, []int{1, 4, 128})
		ref, _ := Solve(base)
		for e := -20; e <= 8; e += 2 {
			c := math.Pow(10, float64(e))
			pr := base
			pr.U, pr.V, pr.G, pr.Power = c*base.U, c*base.V, c*base.G, c*base.Power
			s, err := Solve(pr)
			if err != nil {
				t.Fatal(err)
			}
			checkFeasible(t, "scaled", pr, s)
			for k, pair := range [][2]float64{{s.Lam10, ref.Lam10}, {s.Lam20, ref.Lam20}, {s.Lam11, ref.Lam11}, {s.Lam21, ref.Lam21}} {
				if math.Abs(pair[0]/c-pair[1]) > 1e-9*math.Max(ref.Lam10, ref.Lam11)+1e-300 {
					t.Errorf("scale 1e%d: λ[%d] = %v, want %v", e, k, pair[0]/c, pair[1])
				}
			}
			if math.Abs(s.SumKL-ref.SumKL) > 1e-9*ref.SumKL {
				t.Errorf("scale 1e%d: sumKL %v, want %v", e, s.SumKL, ref.SumKL)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	pr := Problem{U: 0.3, V: 0.7, D: 128, G: 2, Pos: 0.25, Power: 1.5}
	a, _ := Solve(pr)
	for range 5 {
		if b, _ := Solve(pr); b != a {
			t.Fatalf("Solve not deterministic: %+v vs %+v", a, b)
		}
	}
}

func BenchmarkSolve(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	prs := make([]Problem, 1024)
	for i := range prs {
		prs[i] = randomProblem(rng, []int{128})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Solve(prs[i%len(prs)]); err != nil {
			b.Fatal(err)
		}
	}
}
