package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

func mat(rows ...[]float32) *tensor.Matrix {
	m := tensor.New(len(rows), len(rows[0]))
	for i, r := range rows {
		copy(m.Row(i), r)
	}
	return m
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// score runs attack name on obs and returns fresh scores and flags.
func score(t *testing.T, name string, obs *Observation) ([]float64, []bool) {
	t.Helper()
	a, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	s := make([]float64, obs.X.Rows)
	f := make([]bool, obs.X.Rows)
	if err := a.Score(obs, s, f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s, f
}

func TestRegistry(t *testing.T) {
	want := []string{"completion", "completion_supervised", "cosine", "exploit", "grad_match", "hint1_cosine", "hint1_distance", "hint1_inner", "hint3_cosine", "hint3_distance",
		"hint3_inner", "hint5_cosine", "hint5_distance", "hint5_inner", "majority_cosine", "memory_cosine", "memory_norm", "norm",
		"similarity_embed", "similarity_grad", "spectral", "spectral_grad"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	// What each attack declares, from the papers' definitions (METHODS §3).
	needs := map[string]Needs{
		"norm": {Input: Gradient}, "majority_cosine": {Input: Gradient}, "cosine": {Input: Gradient, Oracle: true},
		"spectral": {Input: Embedding}, "memory_norm": {Input: Gradient, EpochMemory: true},
		"memory_cosine": {Input: Gradient, Oracle: true, EpochMemory: true},
		"spectral_grad": {Input: Gradient}, "grad_match": {Input: Gradient, WithOutput: true, Expensive: true},
		"exploit":          {Input: Gradient, WithOutput: true, Expensive: true},
		"similarity_grad":  {Input: Gradient, KnownRows: SimilarityKnown},
		"similarity_embed": {Input: Embedding, KnownRows: SimilarityKnown},
		"completion":       {Input: Embedding, Model: true}, "completion_supervised": {Input: Embedding, Model: true},
	}
	for _, k := range HintCounts {
		for _, s := range []HintScoring{HintDistance, HintInner, HintCosine} {
			needs[HintName(k, s)] = Needs{Input: Gradient, Hints: k}
		}
	}
	for _, n := range want {
		p, err := NewPlugin(n)
		if err != nil || p.Name() != n {
			t.Fatalf("NewPlugin(%q) = %v, %v", n, p, err)
		}
		if got := p.Needs(); got != needs[n] {
			t.Errorf("%s: needs %+v, want %+v", n, got, needs[n])
		}
		_, isBatch := p.(Attack)
		if _, err := New(n); (err == nil) != isBatch {
			t.Errorf("New(%q): err %v, per-batch attack %v", n, err, isBatch)
		}
		_, isModel := p.(ModelAttack)
		if _, err := NewModel(n); (err == nil) != isModel {
			t.Errorf("NewModel(%q): err %v, model attack %v", n, err, isModel)
		}
	}
	if _, err := New("nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("New(nope) error = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering norm twice did not panic")
		}
	}()
	Register("norm", func() Attack { return &Norm{} })
}

func TestNormHandAndSeparation(t *testing.T) {
	x := mat([]float32{3, 4}, []float32{0, 0}, []float32{-1, 2}, []float32{1e-3, 0})
	s, f := score(t, "norm", &Observation{X: x})
	for i, w := range []float64{5, 0, math.Sqrt(5), 1e-3} {
		if !near(s[i], w, 1e-9) || !f[i] {
			t.Errorf("norm row %d = %v (scored %v), want %v", i, s[i], f[i], w)
		}
	}

	// Positives have larger norms than every negative: AUC exactly 1.
	r := rand.New(rand.NewPCG(1, 2))
	b, d := 300, 8
	g := tensor.New(b, d)
	labels := make([]uint8, b)
	for i := range b {
		scale := 1.0
		if r.IntN(5) == 0 {
			labels[i], scale = 1, 3
		}
		var nn float64
		row := g.Row(i)
		for j := range row {
			row[j] = float32(r.NormFloat64())
			nn += float64(row[j]) * float64(row[j])
		}
		for j := range row { // norm in [1,2) for negatives, [3,6) for positives
			row[j] *= float32(scale * (1 + r.Float64()) / math.Sqrt(nn))
		}
	}
	s, f = score(t, "norm", &Observation{X: g})
	if auc, ok := metrics.AUC(s, labels, f); !ok || auc != 1 {
		t.Fatalf("norm AUC = %v, want exactly 1", auc)
	}
}

func TestAttackErrors(t *testing.T) {
	x := mat([]float32{1, 2}, []float32{3, 4})
	nan := mat([]float32{1, 2}, []float32{float32(math.NaN()), 4})
	two := make([]float64, 2)
	twoF := make([]bool, 2)
	for _, tc := range []struct {
		name string
		obs  *Observation
		s    []float64
		want string
	}{
		{"norm", &Observation{Layer: "cut", X: x}, make([]float64, 3), "3 scores"},
		{"norm", &Observation{Layer: "cut", X: nan}, two, "row 1, column 0"},
		{"norm", nil, two, "no observation"},
		{"cosine", &Observation{Layer: "first", X: x}, two, "needs the oracle"},
		{"cosine", &Observation{Layer: "first", X: x, Oracle: []float32{1}}, two, "oracle has 1 values"},
		{"cosine", &Observation{Layer: "first", X: x, Oracle: []float32{1, float32(math.Inf(1))}}, two, "oracle: non-finite"},
		{"majority_cosine", &Observation{Layer: "2", X: nan}, two, `layer "2"`},
		{"hint1_inner", &Observation{Layer: "cut", X: x, Hints: []int{2}}, two, "hint row 2 outside"},
		{"hint3_cosine", &Observation{Layer: "cut", X: nan, Hints: []int{0}}, two, "row 1"},
		{"spectral", &Observation{Layer: "cut", X: nan}, two, "embedding"},
	} {
		a, _ := New(tc.name)
		f := twoF
		if len(tc.s) != 2 {
			f = make([]bool, len(tc.s))
		}
		err := a.Score(tc.obs, tc.s, f)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: error %v, want one naming the attack and containing %q", tc.name, err, tc.want)
		}
	}
}

func TestCosineHand(t *testing.T) {
	x := mat([]float32{1, 1}, []float32{-2, 0}, []float32{0, 0}, []float32{0, 3})
	s, _ := score(t, "cosine", &Observation{X: x, Oracle: []float32{5, 0}})
	for i, w := range []float64{1 / math.Sqrt2, -1, 0, 0} {
		if !near(s[i], w, 1e-12) {
			t.Errorf("cosine row %d = %v, want %v", i, s[i], w)
		}
	}
	s, _ = score(t, "cosine", &Observation{X: x, Oracle: []float32{0, 0}})
	for i := range s {
		if s[i] != 0 {
			t.Errorf("cosine with a zero oracle, row %d = %v, want 0", i, s[i])
		}
	}
}

// naiveMajority is the definition in float64: for each row, the share of
// the other rows with a strictly positive cosine.
func naiveMajority(x *tensor.Matrix) []float64 {
	n := x.Rows
	out := make([]float64, n)
	for i := range n {
		c := 0
		for j := range n {
			if j == i {
				continue
			}
			var dd, ni, nj float64
			for k := range x.Cols {
				a, b := float64(x.At(i, k)), float64(x.At(j, k))
				dd += a * b
				ni += a * a
				nj += b * b
			}
			if ni > 0 && nj > 0 && dd/math.Sqrt(ni*nj) > 0 {
				c++
			}
		}
		if n > 1 {
			out[i] = -float64(c) / float64(n-1)
		}
	}
	return out
}

func TestMajorityCosine(t *testing.T) {
	// Hand case: rows 0 and 1 agree, row 2 opposes both.
	x := mat([]float32{1, 0}, []float32{1, 0.1}, []float32{-1, 0})
	s, _ := score(t, "majority_cosine", &Observation{X: x})
	if !slices.Equal(s, []float64{-0.5, -0.5, 0}) {
		t.Errorf("hand case: %v, want [-0.5 -0.5 0]", s)
	}
	s, _ = score(t, "majority_cosine", &Observation{X: mat([]float32{1, 2})})
	if s[0] != 0 {
		t.Errorf("B=1: %v, want 0", s[0])
	}

	r := rand.New(rand.NewPCG(7, 8))
	// n = 300 and 2000 run the product in several 128-row chunks.
	for _, n := range []int{2, 37, 300, 2000} {
		d := 6
		g := tensor.New(n, d)
		for i := range n {
			if i%17 == 5 {
				continue // zero rows
			}
			sign := float32(1)
			if r.IntN(4) == 0 {
				sign = -1
			}
			for j := range d {
				g.Set(i, j, sign*float32(0.7+r.NormFloat64()))
			}
		}
		want := naiveMajority(g)
		got, _ := score(t, "majority_cosine", &Observation{X: g})
		for i := range n {
			// Near-orthogonal pairs could flip sign in float32; each such
			// pair moves a share by 1/(n−1). Require exact agreement but
			// report the row if it fails.
			if !near(got[i], want[i], 1e-12) {
				t.Fatalf("n=%d row %d: %v, naive %v", n, i, got[i], want[i])
			}
		}
	}
}

func TestHintHand(t *testing.T) {
	x := mat([]float32{2, 0}, []float32{0, 1}, []float32{1, 1}, []float32{-1, 0}, []float32{0, 0})
	r2 := math.Sqrt2
	for _, tc := range []struct {
		name  string
		hints []int
		want  []float64
		flags []bool
	}{
		{"hint3_distance", []int{0, 1}, []float64{0, 0, -1, -r2, -1}, []bool{false, false, true, true, true}},
		{"hint3_inner", []int{0, 1}, []float64{0, 0, 2, -2, 0}, []bool{false, false, true, true, true}},
		{"hint3_cosine", []int{0, 1}, []float64{0, 0, 1 / r2, 0, 0}, []bool{false, false, true, true, true}},
		// inner uses the largest-norm hint whatever its position
		{"hint3_inner", []int{1, 0}, []float64{0, 0, 2, -2, 0}, []bool{false, false, true, true, true}},
		// k = 1 uses only the first hint; row 1 is scored
		{"hint1_distance", []int{0, 1}, []float64{0, -math.Sqrt(5), -r2, -3, -2}, []bool{false, true, true, true, true}},
		{"hint1_cosine", []int{1, 0}, []float64{0, 0, 1 / r2, 0, 0}, []bool{true, false, true, true, true}},
		{"hint5_distance", nil, []float64{0, 0, 0, 0, 0}, []bool{false, false, false, false, false}},
	} {
		s, f := score(t, tc.name, &Observation{X: x, Hints: tc.hints})
		for i := range tc.want {
			if !near(s[i], tc.want[i], 1e-12) || f[i] != tc.flags[i] {
				t.Errorf("%s hints %v: row %d = %v (scored %v), want %v (%v)", tc.name, tc.hints, i, s[i], f[i], tc.want[i], tc.flags[i])
			}
		}
	}
}

func TestPickHints(t *testing.T) {
	labels := []uint8{0, 1, 0, 1, 1, 0, 2, 0}
	pos := []int{1, 3, 4, 6}
	r := rand.New(rand.NewPCG(11, 12))
	var first [8]int
	dst := make([]int, 0, 5)
	const draws = 40000
	for range draws {
		dst = PickHints(labels, 3, r, dst)
		if len(dst) != 3 {
			t.Fatalf("got %d hints, want 3", len(dst))
		}
		for i, h := range dst {
			if !slices.Contains(pos, h) || slices.Contains(dst[:i], h) {
				t.Fatalf("hints %v: not distinct positives", dst)
			}
		}
		first[dst[0]]++
	}
	for _, p := range pos { // each positive leads with probability ¼ (σ ≈ 0.002)
		if f := float64(first[p]) / draws; !near(f, 0.25, 0.012) {
			t.Errorf("positive %d is the first hint %.4f of the time, want 0.25", p, f)
		}
	}
	if got := PickHints(labels, 9, r, nil); len(got) != 4 {
		t.Errorf("k above #positives: %v, want all 4 positives", got)
	}
	if got := PickHints([]uint8{0, 0}, 3, r, nil); len(got) != 0 {
		t.Errorf("no positives: %v", got)
	}
	a := PickHints(labels, 2, rand.New(rand.NewPCG(1, 1)), nil)
	b := PickHints(labels, 2, rand.New(rand.NewPCG(1, 1)), nil)
	if !slices.Equal(a, b) {
		t.Errorf("not deterministic: %v vs %v", a, b)
	}
	if n := testing.AllocsPerRun(20, func() { dst = PickHints(labels, 3, r, dst) }); n != 0 {
		t.Errorf("PickHints allocates %v times", n)
	}
}

// gradientBatch returns a batch where positives' gradients point along +u
// and negatives' along −u with small norms, plus isotropic noise σ.
func gradientBatch(r *rand.Rand, b, d int, posRate, sigma float64) (*tensor.Matrix, []uint8) {
	g := tensor.New(b, d)
	labels := make([]uint8, b)
	for i := range b {
		c := -0.2
		if r.Float64() < posRate {
			labels[i], c = 1, 1
		}
		row := g.Row(i)
		for j := range row {
			v := sigma * r.NormFloat64()
			if j == 0 {
				v += c
			}
			row[j] = float32(v)
		}
	}
	return g, labels
}

func TestGradientAttacksSeparate(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	g, labels := gradientBatch(r, 512, 16, 0.15, 0.05)
	hints := PickHints(labels, 5, r, nil)
	oracle := make([]float32, 16)
	oracle[0] = 1
	known, knownLabels, out := peerInputs(r, labels, 16)
	for _, name := range Names() {
		a, err := New(name)
		if err != nil || a.Needs().Input != Gradient {
			continue // an epoch attack, tested in memory_test.go, or an embedding attack
		}
		if name == "exploit" {
			// The layer output here is noise unrelated to the gradients: no
			// top model explains both, and ExPLoit's soft labels are those
			// of a surrogate that must (exploit_test.go tests it on batches
			// a top did produce).
			continue
		}
		s := make([]float64, g.Rows)
		f := make([]bool, g.Rows)
		if err := a.Score(&Observation{X: g, Oracle: oracle, Hints: hints, PositivesMinority: true,
			Known: known, KnownLabels: knownLabels, Output: out}, s, f); err != nil {
			t.Fatal(err)
		}
		for _, h := range hints[:min(len(hints), 5)] {
			if strings.HasPrefix(name, "hint5") && f[h] {
				t.Errorf("%s scored hint row %d", name, h)
			}
		}
		if auc, ok := metrics.AUC(s, labels, f); !ok || auc < 0.99 {
			t.Errorf("%s: AUC %v on a clearly separated batch", name, auc)
		}
	}

	// Scores independent of the labels: AUC near ½.
	g, _ = gradientBatch(r, 4000, 16, 0.5, 0.3)
	random := make([]uint8, g.Rows)
	for i := range random {
		random[i] = uint8(r.IntN(2))
	}
	s, f := score(t, "norm", &Observation{X: g})
	if auc, _ := metrics.AUC(s, random, f); !near(auc, 0.5, 0.03) {
		t.Errorf("norm AUC against unrelated labels = %v, want ≈ 0.5", auc)
	}
}

// peerInputs returns what the similarity and gradient-matching attacks
// need beyond the gradient: ten known rows with their labels, and a random
// layer output of width d.
func peerInputs(r *rand.Rand, labels []uint8, d int) ([]int, []uint8, *tensor.Matrix) {
	known := r.Perm(len(labels))[:10]
	kl := make([]uint8, len(known))
	for k, i := range known {
		kl[k] = labels[i]
	}
	out := tensor.New(len(labels), d)
	for k := range out.Data {
		out.Data[k] = float32(r.NormFloat64())
	}
	return known, kl, out
}

func TestAttacksAllocateNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	g, labels := gradientBatch(r, 256, 32, 0.2, 0.1)
	hints := PickHints(labels, 5, r, nil)
	known, knownLabels, out := peerInputs(r, labels, 32)
	obs := &Observation{X: g, Oracle: g.Row(hints[0]), Hints: hints, Known: known, KnownLabels: knownLabels, Output: out}
	s := make([]float64, g.Rows)
	f := make([]bool, g.Rows)
	for _, name := range Names() {
		if name == "majority_cosine" || name == "spectral" || name == "spectral_grad" {
			continue // their MatMul runs through the engine, which may allocate
		}
		a, err := New(name)
		if err != nil {
			continue // an epoch attack: it scores once per epoch
		}
		_ = a.Score(obs, s, f)
		if n := testing.AllocsPerRun(10, func() { _ = a.Score(obs, s, f) }); n != 0 {
			t.Errorf("%s allocates %v times per batch", name, n)
		}
	}
}

func TestPositive(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want int32
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0}, {math.SmallestNonzeroFloat32, 1}, {-math.SmallestNonzeroFloat32, 0},
		{1, 1}, {-1, 0}, {math.MaxFloat32, 1}, {-math.MaxFloat32, 0}, {float32(math.Inf(1)), 1}, {float32(math.Inf(-1)), 0},
	} {
		if got := positive(tc.v); got != tc.want {
			t.Errorf("positive(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
