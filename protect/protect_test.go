package protect

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

func TestRegistry(t *testing.T) {
	for _, n := range []string{"none", "iso", "max_norm", "max_norm_label", "marvell"} {
		if !slices.Contains(Names(), n) {
			t.Errorf("%q not registered (have %v)", n, Names())
		}
	}
	bad := []struct {
		name string
		o    Params
	}{
		{"nope", Params{}},
		{"iso", Params{}},
		{"iso", Params{"iso_t": 1, "iso_ratio": 1}},
		{"iso", Params{"iso_t": -1}},
		{"marvell", Params{}},
		{"marvell", Params{"marvell_error_bound": 0.3, "marvell_sumkl": 0.5}},
		{"marvell", Params{"marvell_error_bound": 0.5}},
		{"marvell", Params{"marvell_s": math.NaN()}},
	}
	for _, c := range bad {
		if _, err := New(c.name, c.o); err == nil {
			t.Errorf("New(%q, %+v): no error", c.name, c.o)
		}
	}
	for _, c := range []struct {
		name string
		o    Params
	}{{"iso", Params{"iso_ratio": 2}}, {"marvell", Params{"marvell_s": 1}}, {"marvell", Params{"marvell_error_bound": 0.3}}, {"none", Params{}}} {
		if p, err := New(c.name, c.o); err != nil || p.Name() != c.name {
			t.Errorf("New(%q, %+v) = %v, %v", c.name, c.o, p, err)
		}
	}
}

func TestBadBatch(t *testing.T) {
	g := tensor.New(2, 3)
	g.Data[4] = float32(math.NaN())
	for _, n := range Names() {
		p, _ := New(n, map[string]Params{"iso": {"iso_t": 1}, "marvell": {"marvell_s": 1}, "sparsify": {"sparsify_p": 0.5}, "grad_dp": {"grad_dp_sigma": 1, "grad_dp_clip": 1}, "dsgd": {"dsgd_bins": 4}}[n])
		if p == nil {
			t.Fatalf("%s: no parameters for it in this test", n)
		}
		if _, err := p.Protect(&Batch{Grad: g, Labels: []float32{0, 1}, Probs: []float32{0.2, 0.3}}, &tensor.Matrix{}, newRNG(1)); err == nil {
			t.Errorf("%s: NaN gradient accepted", n)
		}
	}
	ok := tensor.New(2, 3)
	for _, n := range []string{"max_norm_label", "marvell"} {
		p, _ := New(n, map[string]Params{"marvell": {"marvell_s": 1}}[n])
		if _, err := p.Protect(&Batch{Grad: ok, Labels: []float32{0}, Probs: []float32{0.2, 0.3}}, &tensor.Matrix{}, newRNG(1)); err == nil {
			t.Errorf("%s: short labels accepted", n)
		}
		if _, err := p.Protect(&Batch{Grad: ok, Labels: []float32{0, 2}, Probs: []float32{0.2, 0.3}}, &tensor.Matrix{}, newRNG(1)); err == nil {
			t.Errorf("%s: label 2 accepted", n)
		}
	}
}

// repeatRows builds a batch of n copies of each given row.
func repeatRows(n int, rows ...[]float32) *tensor.Matrix {
	d := len(rows[0])
	m := tensor.New(n*len(rows), d)
	for i := range m.Rows {
		copy(m.Row(i), rows[i%len(rows)])
	}
	return m
}

func TestNone(t *testing.T) {
	g := repeatRows(1, []float32{1, 2}, []float32{-3, 4})
	out := &tensor.Matrix{}
	if _, err := (None{}).Protect(&Batch{Grad: g}, out, newRNG(1)); err != nil || !slices.Equal(out.Data, g.Data) {
		t.Fatalf("none: %v, %v", out.Data, err)
	}
}

func TestIsoVariance(t *testing.T) {
	// Rows of norm 1 and 5 (max² = 25), d = 8, t = 2: variance 2/8·25 = 6.25.
	g := repeatRows(2000, []float32{1, 0, 0, 0, 0, 0, 0, 0}, []float32{3, 4, 0, 0, 0, 0, 0, 0})
	for _, o := range []Params{{"iso_t": 2}, {"iso_ratio": math.Sqrt2}} {
		p, err := New("iso", o)
		if err != nil {
			t.Fatal(err)
		}
		out := &tensor.Matrix{}
		st, err := p.Protect(&Batch{Grad: g}, out, newRNG(3))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(st["noise_var"]-6.25) > 1e-9 {
			t.Errorf("%+v: noise_var %v, want 6.25", o, st["noise_var"])
		}
		var s, s1 float64
		for k := range g.Data {
			e := float64(out.Data[k] - g.Data[k])
			s += e * e
			s1 += e
		}
		n := float64(len(g.Data))
		// 32000 draws: the sample variance has relative sd sqrt(2/n) ≈ 0.8%.
		if v := s / n; math.Abs(v-6.25) > 0.04*6.25 || math.Abs(s1/n) > 0.1 {
			t.Errorf("%+v: empirical variance %v, mean %v; want 6.25, 0", o, v, s1/n)
		}
	}
}

func TestMaxNorm(t *testing.T) {
	// Norms 1 and 3 and a zero row: σ² = 9/1 − 1 = 8 for the first,
	// E‖g̃‖² = ‖g‖²(1 + σ²) = 9 for every non-zero row.
	g := repeatRows(4000, []float32{0.6, 0.8, 0}, []float32{0, 0, 3}, []float32{0, 0, 0})
	p, _ := New("max_norm", Params{})
	out := &tensor.Matrix{}
	st, err := p.Protect(&Batch{Grad: g}, out, newRNG(4))
	if err != nil {
		t.Fatal(err)
	}
	if st["max_norm"] != 3 {
		t.Errorf("max_norm stat %v, want 3", st["max_norm"])
	}
	var sum [3]float64
	for i := range g.Rows {
		r, o := g.Row(i), out.Row(i)
		sum[i%3] += rowNorm2(o)
		// g̃ is parallel to g: the cross product vanishes.
		if c := float64(r[0]*o[1] - r[1]*o[0]); math.Abs(c) > 1e-5 {
			t.Fatalf("row %d not parallel: %v vs %v", i, r, o)
		}
		if i%3 == 2 && rowNorm2(o) != 0 {
			t.Fatalf("zero row became %v", o)
		}
	}
	// Row 0: ‖g̃‖² = (1+σξ)², variance of that is large (σ² = 8): mean of
	// 4000 has sd ≈ sqrt(2·64+4·8)/sqrt(4000)·… ≈ 0.2·sd-units; allow 8%.
	if m := sum[0] / 4000; math.Abs(m-9) > 0.08*9 {
		t.Errorf("E‖g̃‖² of norm-1 rows %v, want 9", m)
	}
	if m := sum[1] / 4000; math.Abs(m-9) > 1e-5 {
		t.Errorf("max row changed: %v", m)
	}
}

func TestMaxNormLabel(t *testing.T) {
	// Positives p̃ = 0.2 and 0.6, negative p̃ = 0.4: T = 0.8; σ² = 0.64/0.16 − 1 = 3
	// for the negative and the p̃ = 0.6 positive, 0 for the p̃ = 0.2 positive.
	n := 6000
	g := repeatRows(n, []float32{1, 1}, []float32{2, -1}, []float32{-1, 3})
	labels := make([]float32, g.Rows)
	probs := make([]float32, g.Rows)
	for i := range g.Rows {
		labels[i] = []float32{1, 1, 0}[i%3]
		probs[i] = []float32{0.2, 0.6, 0.4}[i%3]
	}
	p, _ := New("max_norm_label", Params{})
	out := &tensor.Matrix{}
	st, err := p.Protect(&Batch{Grad: g, Labels: labels, Probs: probs}, out, newRNG(5))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st["target"]-0.8) > 1e-7 || st["one_class"] != 0 {
		t.Errorf("stats %v, want target 0.8, one_class 0", st)
	}
	wantVar := []float64{0, 3, 3}
	var s [3]float64
	for i := range g.Rows {
		f := float64(out.Row(i)[0]/g.Row(i)[0]) - 1
		s[i%3] += f * f
	}
	for k := range 3 {
		if v := s[k] / float64(n); math.Abs(v-wantVar[k]) > 0.06*wantVar[k]+1e-9 {
			t.Errorf("row kind %d: scale variance %v, want %v", k, v, wantVar[k])
		}
	}
	// An all-negative batch reuses T = 0.8: σ² = 0.64/0.16 − 1 = 3 at p̃ = 0.4.
	neg := repeatRows(n, []float32{1, 1})
	nl, np := make([]float32, n), make([]float32, n)
	for i := range np {
		np[i] = 0.4
	}
	st, err = p.Protect(&Batch{Grad: neg, Labels: nl, Probs: np}, out, newRNG(6))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(st["target"]-0.8) > 1e-7 || st["one_class"] != 1 {
		t.Errorf("fallback stats %v", st)
	}
	var sv float64
	for i := range n {
		f := float64(out.Row(i)[0]) - 1
		sv += f * f
	}
	if v := sv / float64(n); math.Abs(v-3) > 0.18 {
		t.Errorf("fallback scale variance %v, want 3", v)
	}
	// Start-up with only negatives: T = max p̃ = 0.4, so no noise at all here.
	q, _ := New("max_norm_label", Params{})
	st, _ = q.Protect(&Batch{Grad: neg, Labels: nl, Probs: np}, out, newRNG(7))
	if math.Abs(st["target"]-0.4) > 1e-7 || st["one_class"] != 1 || !slices.Equal(out.Data, neg.Data) {
		t.Errorf("start-up: %v", st)
	}
}

func TestLabelDP(t *testing.T) {
	if _, err := NewLabelDP(0, 1); err == nil {
		t.Error("ε = 0 accepted")
	}
	for _, eps := range []float64{0.5, 1, 3} {
		dp, err := NewLabelDP(eps, 42)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Exp(eps) / (1 + math.Exp(eps))
		if math.Abs(dp.KeepProb()-want) > 1e-15 {
			t.Errorf("KeepProb %v, want %v", dp.KeepProb(), want)
		}
		n := 200000
		ids := make([]uint64, n)
		labels := make([]uint8, n)
		for i := range ids {
			ids[i] = uint64(i)*7919 + 13
			labels[i] = uint8(i % 2)
		}
		noisy := dp.Apply(ids, labels, nil)
		kept := 0
		for i := range noisy {
			if noisy[i] == labels[i] {
				kept++
			}
		}
		sd := math.Sqrt(want * (1 - want) / float64(n))
		if r := float64(kept) / float64(n); math.Abs(r-want) > 5*sd {
			t.Errorf("ε = %v: keep rate %v, want %v ± %v", eps, r, want, 5*sd)
		}
		// Same draw for an ID in any order, any epoch.
		rev := slices.Clone(ids)
		slices.Reverse(rev)
		revLab := slices.Clone(labels)
		slices.Reverse(revLab)
		again := dp.Apply(rev, revLab, nil)
		for i := range again {
			if again[i] != noisy[n-1-i] {
				t.Fatalf("ID %d: noisy label depends on order", rev[i])
			}
		}
	}
	a, _ := NewLabelDP(1, 1)
	b, _ := NewLabelDP(1, 2)
	diff := 0
	for id := range uint64(1000) {
		if a.Keep(id) != b.Keep(id) {
			diff++
		}
	}
	if diff == 0 {
		t.Error("seed has no effect")
	}
}
