package protect

import (
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/marvell"
	"github.com/splitguard/splitguard/tensor"
)

// twoClassBatch draws n rows per class: positives around mu1, negatives
// around mu0, with per-coordinate sd s1, s0.
func twoClassBatch(seed uint64, n int, mu0, mu1 []float64, s0, s1 float64) (*tensor.Matrix, []float32) {
	rng := newRNG(seed)
	d := len(mu0)
	g := tensor.New(2*n, d)
	y := make([]float32, 2*n)
	for i := range g.Rows {
		mu, s := mu0, s0
		if i%2 == 1 {
			mu, s, y[i] = mu1, s1, 1
		}
		for k := range d {
			g.Row(i)[k] = float32(mu[k] + s*rng.NormFloat64())
		}
	}
	return g, y
}

var marvellKeys = []string{"u", "v", "delta2", "P", "lam10", "lam20", "lam11", "lam21",
	"sumKL_before", "sumKL", "error_lower_bound", "auc_bound", "solve_ms", "one_class"}

func TestMarvellStatsAndCovariance(t *testing.T) {
	mu0, mu1 := []float64{-1, 0, 0.5, 0}, []float64{2, 1, 0.5, 0}
	g, y := twoClassBatch(1, 3000, mu0, mu1, 0.5, 0.2)
	p, _ := New("marvell", Params{"marvell_s": 2})
	out := &tensor.Matrix{}
	st, err := p.Protect(&Batch{Grad: g, Labels: y}, out, newRNG(2))
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(st))
	if want := slices.Sorted(slices.Values(marvellKeys)); !slices.Equal(keys, want) {
		t.Errorf("stats keys %v, want %v", keys, want)
	}
	// Independent estimates of the constants.
	d := g.Cols
	var m0, m1 [4]float64
	for i := range g.Rows {
		m := &m0
		if y[i] == 1 {
			m = &m1
		}
		for k := range d {
			m[k] += float64(g.Row(i)[k]) / 3000
		}
	}
	var u, v, delta2 float64
	for i := range g.Rows {
		for k := range d {
			if y[i] == 1 {
				v += math.Pow(float64(g.Row(i)[k])-m1[k], 2) / (3000 * 4)
			} else {
				u += math.Pow(float64(g.Row(i)[k])-m0[k], 2) / (3000 * 4)
			}
		}
	}
	dir := make([]float64, d)
	for k := range d {
		dir[k] = m1[k] - m0[k]
		delta2 += dir[k] * dir[k]
	}
	for k := range d {
		dir[k] /= math.Sqrt(delta2)
	}
	for _, c := range []struct {
		key  string
		want float64
	}{{"u", u}, {"v", v}, {"delta2", delta2}, {"P", 2 * delta2}, {"one_class", 0}} {
		if math.Abs(st[c.key]-c.want) > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s = %v, want %v", c.key, st[c.key], c.want)
		}
	}
	// sumKL before by the formula of METHODS §4 at λ = 0.
	before := (3*(u/v+v/u)+(u+delta2)/v+(v+delta2)/u)/2 - 4
	if math.Abs(st["sumKL_before"]-before) > 1e-9*before {
		t.Errorf("sumKL_before %v, want %v", st["sumKL_before"], before)
	}
	if math.Abs(st["auc_bound"]-marvell.AUCBound(st["sumKL"])) > 0 || st["error_lower_bound"] != marvell.ErrorLowerBound(st["sumKL"]) {
		t.Errorf("bounds inconsistent: %v", st)
	}
	// Noise covariance per class: variance along Δ̂ ≈ λ₁ᶜ, per orthogonal
	// coordinate ≈ λ₂ᶜ (3000 rows: relative sd ≈ 2.6%; allow 10%).
	for c := range 2 {
		var along, orth float64
		for i := range g.Rows {
			if int(y[i]) != c {
				continue
			}
			var a float64
			var n2 float64
			for k := range d {
				e := float64(out.Row(i)[k] - g.Row(i)[k])
				a += e * dir[k]
				n2 += e * e
			}
			along += a * a / 3000
			orth += (n2 - a*a) / (3000 * 3)
		}
		l1, l2 := st["lam10"], st["lam20"]
		if c == 1 {
			l1, l2 = st["lam11"], st["lam21"]
		}
		if math.Abs(along-l1) > 0.1*l1+1e-9 || math.Abs(orth-l2) > 0.1*math.Max(l2, 0.01*l1)+1e-9 {
			t.Errorf("class %d: noise variance along %v orth %v, want %v, %v", c, along, orth, l1, l2)
		}
	}
}

func TestMarvellOneClassAndDeterminism(t *testing.T) {
	mu0, mu1 := []float64{-1, 0, 0.5}, []float64{2, 1, 0.5}
	g, y := twoClassBatch(3, 500, mu0, mu1, 0.3, 0.1)
	run := func(seed uint64) (*tensor.Matrix, Stats) {
		p, _ := New("marvell", Params{"marvell_s": 1})
		out := &tensor.Matrix{}
		st, err := p.Protect(&Batch{Grad: g, Labels: y}, out, newRNG(seed))
		if err != nil {
			t.Fatal(err)
		}
		return out, maps.Clone(st)
	}
	a, sa := run(9)
	b, _ := run(9)
	if !slices.Equal(a.Data, b.Data) {
		t.Error("same seed, different output")
	}
	// One class after a valid batch: reuse λ's and direction.
	p, _ := New("marvell", Params{"marvell_s": 1})
	out := &tensor.Matrix{}
	if _, err := p.Protect(&Batch{Grad: g, Labels: y}, out, newRNG(9)); err != nil {
		t.Fatal(err)
	}
	n := 4000
	neg := tensor.New(n, 3)
	for i := range n {
		copy(neg.Row(i), []float32{5, 5, 5})
	}
	st, err := p.Protect(&Batch{Grad: neg, Labels: make([]float32, n)}, out, newRNG(10))
	if err != nil {
		t.Fatal(err)
	}
	if st["one_class"] != 1 || st["lam10"] != sa["lam10"] || st["lam11"] != sa["lam11"] || st["delta2"] != sa["delta2"] {
		t.Errorf("fallback stats %v, want the previous batch's %v", st, sa)
	}
	dir := []float64{3, 1, 0}
	var along float64
	for i := range n {
		var s float64
		for k := range 3 {
			s += float64(out.Row(i)[k]-5) * dir[k] / math.Sqrt(10)
		}
		along += s * s / float64(n)
	}
	// Δ̂ of the first batch is only ≈ (3,1,0)/√10; allow 10%.
	if math.Abs(along-sa["lam10"]) > 0.1*sa["lam10"] {
		t.Errorf("fallback noise variance along Δ̂ %v, want λ₁⁰ = %v", along, sa["lam10"])
	}
	// Start-up with one class, and a zero batch: finite, no NaN.
	q, _ := New("marvell", Params{"marvell_error_bound": 0.4})
	st, err = q.Protect(&Batch{Grad: neg, Labels: make([]float32, n)}, out, newRNG(11))
	if err != nil || st["one_class"] != 1 {
		t.Fatalf("start-up: %v %v", st, err)
	}
	if err := tensor.CheckFinite("start-up output", out); err != nil {
		t.Error(err)
	}
	zero := tensor.New(6, 3)
	st, err = q.Protect(&Batch{Grad: zero, Labels: []float32{0, 1, 0, 1, 0, 1}}, out, newRNG(12))
	if err != nil || tensor.CheckFinite("zero output", out) != nil {
		t.Fatalf("zero batch: %v %v %v", st, err, out.Data)
	}
	for k, v := range st {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("zero batch: %s = %v", k, v)
		}
	}
}

func TestMarvellTargetMode(t *testing.T) {
	mu0, mu1 := []float64{-1, 0, 0.5, 0, 1}, []float64{2, 1, 0.5, 0, 1}
	g, y := twoClassBatch(5, 300, mu0, mu1, 0.3, 0.2)
	for _, o := range []Params{{"marvell_error_bound": 0.4}, {"marvell_sumkl": 0.5, "marvell_s": 0.01}} {
		p, _ := New("marvell", o)
		st, err := p.Protect(&Batch{Grad: g, Labels: y}, &tensor.Matrix{}, newRNG(1))
		if err != nil {
			t.Fatal(err)
		}
		tau := o["marvell_sumkl"]
		if tau == 0 {
			tau = 0.16
		}
		if st["sumKL"] > tau || st["target_iters"] < 1 {
			t.Errorf("%+v: sumKL %v > τ %v (iters %v)", o, st["sumKL"], tau, st["target_iters"])
		}
		// The previous budget P/1.5 must not have reached τ.
		pr := marvell.Problem{U: st["u"], V: st["v"], D: g.Cols, G: st["delta2"], Pos: 0.5, Power: st["P"] / 1.5}
		s, _ := marvell.Solve(pr)
		if s.SumKL <= tau {
			t.Errorf("%+v: P/1.5 already reaches τ (%v)", o, s.SumKL)
		}
	}
}
