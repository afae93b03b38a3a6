package attack

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// angleAttack is a toy tunable attack: it scores a two-column row by its
// projection on the direction at angle θ ∈ [0, π] (default 0).
type angleAttack struct{ theta float64 }

func (*angleAttack) Name() string { return "angle" }
func (*angleAttack) Needs() Needs { return Needs{Input: Gradient} }
func (*angleAttack) Params() []Param {
	return []Param{{Key: "theta", Min: 0, Max: math.Pi}}
}
func (a *angleAttack) SetParams(v Values) error { a.theta = v["theta"]; return nil }
func (a *angleAttack) Score(obs *Observation, scores []float64, scored []bool) error {
	c, s := math.Cos(a.theta), math.Sin(a.theta)
	for i := range obs.X.Rows {
		r := obs.X.Row(i)
		scores[i] = c*float64(r[0]) + s*float64(r[1])
		scored[i] = true
	}
	return nil
}

// angleBatch draws a batch of B rows, a share pos of them positive, the
// positives' mean shifted by delta (unit covariance), and its first known
// rows (the known rows of the tuner).
func angleBatch(r *rand.Rand, b int, pos float64, delta [2]float64, known int) (*Observation, []uint8) {
	x := tensor.New(b, 2)
	y := make([]uint8, b)
	for i := range b {
		if r.Float64() < pos {
			y[i] = 1
		}
		row := x.Row(i)
		for j := range 2 {
			row[j] = float32(r.NormFloat64() + float64(y[i])*delta[j])
		}
	}
	perm := r.Perm(b)[:known]
	kl := make([]uint8, known)
	for k, i := range perm {
		kl[k] = y[i]
	}
	return &Observation{Layer: "cut", X: x, Known: perm, KnownLabels: kl}, y
}

// TestTunedSearchAgainstClosedForm: the tuned attacker of a projection at
// angle θ chooses, among its candidates, (i) exactly the one an independent
// re-computation of its objective (the mean over batches and folds of the
// fold AUCs, by metrics.AUC) selects, and (ii) one whose population AUC —
// Φ(⟨u_θ, Δ⟩/√2) for unit-covariance classes whose means differ by Δ — is
// within 0.01 of the best candidate's, oriented by the sign of ⟨u_θ, Δ⟩.
func TestTunedSearchAgainstClosedForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		phi  float64 // angle of Δ
	}{
		{"aligned with the default", 0.05},
		{"oblique", 1.1},
		{"opposite to the default", math.Pi - 0.2},
		{"below zero", -0.7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const budget, known, batches = 12, 64, 40
			delta := [2]float64{1.5 * math.Cos(tc.phi), 1.5 * math.Sin(tc.phi)}
			tu, err := NewTunedFrom("angle", func() (Attack, error) { return &angleAttack{}, nil }, known, budget, 7)
			if err != nil {
				t.Fatal(err)
			}
			cands := tu.Candidates()
			if len(cands) != budget || cands[0]["theta"] != 0 {
				t.Fatalf("candidates %v: want %d, the default first", cands, budget)
			}
			r := rand.New(rand.NewPCG(3, 4))
			sum := make([]float64, budget)
			cnt := make([]int, budget)
			for range batches {
				obs, _ := angleBatch(r, 256, 0.3, delta, known)
				s := make([]float64, 256)
				f := make([]bool, 256)
				if err := tu.Score(obs, s, f); err != nil {
					t.Fatal(err)
				}
				// The independent objective: fold f = known positions of
				// parity f, each candidate's projection, metrics.AUC.
				for fold := range 2 {
					var sc []float64
					var lab []uint8
					for k := range obs.Known {
						if k%2 == fold {
							lab = append(lab, obs.KnownLabels[k])
						}
					}
					for c, v := range cands {
						sc = sc[:0]
						for k, i := range obs.Known {
							if k%2 == fold {
								row := obs.X.Row(i)
								sc = append(sc, math.Cos(v["theta"])*float64(row[0])+math.Sin(v["theta"])*float64(row[1]))
							}
						}
						if auc, ok := metrics.AUC(sc, lab, nil); ok {
							sum[c] += auc
							cnt[c]++
						}
					}
				}
			}
			want, gap := 0, -1.0
			for c := range cands {
				if g := math.Abs(sum[c]/float64(cnt[c]) - 0.5); g > gap {
					want, gap = c, g
				}
			}
			ch, ok := tu.Choice("cut")
			if !ok || ch.Candidate != want {
				t.Fatalf("chose candidate %d (%v), the independent objective chooses %d", ch.Candidate, ch, want)
			}
			pop := func(theta float64) float64 {
				return normCDF((math.Cos(theta)*delta[0] + math.Sin(theta)*delta[1]) / math.Sqrt2)
			}
			best := 0.0
			for _, v := range cands {
				best = max(best, math.Abs(pop(v["theta"])-0.5))
			}
			got := pop(ch.Values["theta"])
			t.Logf("φ = %.2f: chose %s, population AUC %.3f", tc.phi, ch.String(tu.Params()), got)
			if math.Abs(got-0.5) < best-0.01 {
				t.Errorf("chosen θ = %.3f has population |AUC − ½| %.4f; the best candidate has %.4f", ch.Values["theta"], math.Abs(got-0.5), best)
			}
			if wantSign := math.Copysign(1, got-0.5); ch.Values[SignKey] != wantSign {
				t.Errorf("orientation %v, want %v (population AUC %.3f)", ch.Values[SignKey], wantSign, got)
			}
		})
	}
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// TestTunedScoresKnowingAllKnownRows: the tuned score is the chosen
// candidate's score (oriented) with the known rows left out; repeated on
// the same batches it is identical (seeded candidates, no other
// randomness).
func TestTunedScoresKnowingAllKnownRows(t *testing.T) {
	mk := func() *Tuned {
		tu, err := NewTuned("similarity_grad", 20, 6, 11)
		if err != nil {
			t.Fatal(err)
		}
		return tu
	}
	a, b := mk(), mk()
	r := rand.New(rand.NewPCG(5, 6))
	for range 5 {
		obs, _ := angleBatch(r, 64, 0.4, [2]float64{1, -1}, 20)
		sa, fa := make([]float64, 64), make([]bool, 64)
		sb, fb := make([]float64, 64), make([]bool, 64)
		if err := a.Score(obs, sa, fa); err != nil {
			t.Fatal(err)
		}
		if err := b.Score(obs, sb, fb); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sa, sb) || !slices.Equal(fa, fb) {
			t.Fatal("two tuned attackers with the same seed scored the same batch differently")
		}
		ch, _ := a.Choice("cut")
		plain := NewSimilarity(Gradient, SimilarityKnown)
		if err := plain.SetParams(a.Candidates()[ch.Candidate]); err != nil {
			t.Fatal(err)
		}
		sp, fp := make([]float64, 64), make([]bool, 64)
		if err := plain.Score(obs, sp, fp); err != nil {
			t.Fatal(err)
		}
		for _, k := range obs.Known {
			if fa[k] {
				t.Fatalf("known row %d scored", k)
			}
		}
		for i := range 64 {
			if fa[i] && (!fp[i] || sa[i] != ch.Values[SignKey]*sp[i]) {
				t.Fatalf("row %d: tuned %v, chosen candidate × sign %v", i, sa[i], ch.Values[SignKey]*sp[i])
			}
		}
	}
}

func TestCandidatesAndBestCandidate(t *testing.T) {
	params := []Param{
		{Key: "lr", Min: 1e-3, Max: 1e-1, Log: true, Default: 0.01},
		{Key: "width", Min: 4, Max: 64, Int: true, Default: 16},
		{Key: "metric", Choices: []string{"a", "b", "c"}, Default: 2},
	}
	c := Candidates("x", params, 200, 1)
	if len(c) != 200 || c[0]["lr"] != 0.01 || c[0]["width"] != 16 || c[0]["metric"] != 2 {
		t.Fatalf("first candidate %v, want the defaults", c[0])
	}
	var logLow int
	for _, v := range c[1:] {
		if err := checkValues("x", params, v); err != nil {
			t.Fatal(err)
		}
		if v["width"] != math.Round(v["width"]) {
			t.Fatalf("width %v not an integer", v["width"])
		}
		if v["lr"] < 0.01 {
			logLow++
		}
	}
	// Log-uniform on [1e-3, 1e-1]: half the draws below 1e-2.
	if logLow < 70 || logLow > 130 {
		t.Errorf("%d of 199 log-uniform draws below the geometric middle, want about 100", logLow)
	}
	if d := Candidates("y", params, 200, 1); d[1]["lr"] == c[1]["lr"] {
		t.Error("two attacks drew the same candidates")
	}
	if d := Candidates("x", params, 200, 1); !slices.EqualFunc(c, d, func(a, b Values) bool { return a.String() == b.String() }) {
		t.Error("candidates not deterministic for a seed")
	}
	for _, tc := range []struct {
		means []float64
		best  int
		sign  float64
	}{
		{[]float64{0.6, 0.7, 0.2}, 2, -1},
		{[]float64{0.6, 0.4}, 0, 1}, // tie: the earlier, +1
		{[]float64{math.NaN(), 0.45}, 1, -1},
		{[]float64{math.NaN(), math.NaN()}, 0, 1},
	} {
		if b, s := BestCandidate(tc.means); b != tc.best || s != tc.sign {
			t.Errorf("BestCandidate(%v) = %d, %v; want %d, %v", tc.means, b, s, tc.best, tc.sign)
		}
	}
}

// TestTunableParams: every registered per-batch attack's declared
// parameters are valid, its defaults are what the registered attack uses
// (setting them changes no score), and an out-of-range value is refused.
func TestTunableParams(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	obs, _ := angleBatch(r, 48, 0.3, [2]float64{1, 1}, 10)
	obs.Output = obs.X
	obs.Hints = []int{0, 1, 2, 3, 4}
	obs.Oracle = []float32{1, 0}
	for _, name := range Names() {
		a, err := New(name)
		if err != nil {
			continue
		}
		tu, ok := a.(Tunable)
		if !ok {
			continue
		}
		if a.Needs().Expensive {
			continue // grad_match: checked below with the default setting only
		}
		want, wantF := score(t, name, obs)
		if err := tu.SetParams(Defaults(tu.Params())); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, gotF := make([]float64, 48), make([]bool, 48)
		if err := a.Score(obs, got, gotF); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !slices.Equal(gotF, wantF) {
			t.Errorf("%s: its declared defaults change its scores", name)
		}
		bad := Defaults(tu.Params())
		bad[tu.Params()[0].Key] = 99
		if tu.SetParams(bad) == nil {
			t.Errorf("%s: out-of-range %s accepted", name, tu.Params()[0].Key)
		}
	}
	g := NewGradMatch()
	d := Defaults(g.Params())
	if d["iterations"] != float64(g.Iterations) || d["lr"] != g.LR {
		t.Errorf("grad_match's declared defaults %v, its settings %d, %v", d, g.Iterations, g.LR)
	}
}

// TestSimilarityMetrics checks the inner, distance and centred forms
// against sums written out for a hand batch.
func TestSimilarityMetrics(t *testing.T) {
	x := mat([]float32{1, 0}, []float32{0, 2}, []float32{3, 1}, []float32{-1, -1})
	obs := &Observation{Layer: "cut", X: x, Known: []int{0, 1}, KnownLabels: []uint8{1, 0}}
	mean := [2]float64{3.0 / 4, 2.0 / 4}
	c := func(i int) [2]float64 {
		r := x.Row(i)
		return [2]float64{float64(r[0]) - mean[0], float64(r[1]) - mean[1]}
	}
	dotc := func(a, b [2]float64) float64 { return a[0]*b[0] + a[1]*b[1] }
	for _, tc := range []struct {
		metric, centre float64
		want           map[int]float64
	}{
		{1, 0, map[int]float64{2: 3 - 2, 3: -1 - (-2)}},
		{2, 0, map[int]float64{2: -math.Sqrt(5) + math.Sqrt(10), 3: -math.Sqrt(5) + math.Sqrt(10)}},
		{1, 1, map[int]float64{2: dotc(c(2), c(0)) - dotc(c(2), c(1)), 3: dotc(c(3), c(0)) - dotc(c(3), c(1))}},
	} {
		a := NewSimilarity(Gradient, 10)
		if err := a.SetParams(Values{"metric": tc.metric, "centre": tc.centre}); err != nil {
			t.Fatal(err)
		}
		s, f := make([]float64, 4), make([]bool, 4)
		if err := a.Score(obs, s, f); err != nil {
			t.Fatal(err)
		}
		for i, w := range tc.want {
			if !f[i] || !near(s[i], w, 1e-6) {
				t.Errorf("metric %v centre %v row %d: %v, want %v", tc.metric, tc.centre, i, s[i], w)
			}
		}
	}
}

// TestMajorityThreshold counts, by brute force, the pairs whose cosine
// exceeds τ.
func TestMajorityThreshold(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	x := tensor.New(40, 5)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	cos := func(i, j int) float64 {
		a, b := x.Row(i), x.Row(j)
		return dot(a, b) / math.Sqrt(dot(a, a)*dot(b, b))
	}
	for _, tau := range []float64{-0.3, 0, 0.25} {
		a := &MajorityCosine{}
		if err := a.SetParams(Values{"threshold": tau}); err != nil {
			t.Fatal(err)
		}
		s, f := make([]float64, 40), make([]bool, 40)
		if err := a.Score(&Observation{Layer: "cut", X: x}, s, f); err != nil {
			t.Fatal(err)
		}
		for i := range 40 {
			n := 0
			for j := range 40 {
				if j != i && cos(i, j) > float64(float32(tau))+1e-6 {
					n++
				}
			}
			if !near(s[i], -float64(n)/39, 1.5/39) {
				t.Errorf("τ %v row %d: %v, want %v", tau, i, s[i], -float64(n)/39)
			}
		}
	}
}

// TestSpectralStandardise: the standardised attack scores as the plain one
// does on a batch whose columns were standardised beforehand.
func TestSpectralStandardise(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	n, d := 60, 4
	x := tensor.New(n, d)
	for i := range n {
		for j := range d {
			x.Row(i)[j] = float32(r.NormFloat64() * float64(1+3*j))
		}
	}
	z := tensor.New(n, d)
	for j := range d {
		var m, v float64
		for i := range n {
			m += float64(x.Row(i)[j])
		}
		m /= float64(n)
		for i := range n {
			v += (float64(x.Row(i)[j]) - m) * (float64(x.Row(i)[j]) - m)
		}
		sd := math.Sqrt(v / float64(n))
		for i := range n {
			z.Row(i)[j] = float32((float64(x.Row(i)[j]) - m) / sd)
		}
	}
	want, _ := score(t, "spectral", &Observation{Layer: "cut", X: z, PositivesMinority: true})
	a := &Spectral{Standardise: true}
	got, f := make([]float64, n), make([]bool, n)
	if err := a.Score(&Observation{Layer: "cut", X: x, PositivesMinority: true}, got, f); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !near(got[i], want[i], 1e-4) {
			t.Fatalf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestTunedNameRefused(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a name ending in _tuned was registered")
		}
	}()
	Register("x"+TunedSuffix, func() Attack { return &Norm{} })
}

// TestHintCount: a hint attack set to compare with its first two of five
// hints scores −min distance to those two, and leaves all five unscored.
func TestHintCount(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	x := tensor.New(30, 3)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	hints := []int{4, 9, 17, 22, 28}
	a := NewHint(5, HintDistance)
	if err := a.SetParams(Values{"hints": 2}); err != nil {
		t.Fatal(err)
	}
	s, f := make([]float64, 30), make([]bool, 30)
	if err := a.Score(&Observation{Layer: "cut", X: x, Hints: hints}, s, f); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if slices.Contains(hints, i) {
			if f[i] {
				t.Errorf("hint row %d scored", i)
			}
			continue
		}
		want := -math.Min(math.Sqrt(sqDist(x.Row(i), x.Row(4))), math.Sqrt(sqDist(x.Row(i), x.Row(9))))
		if !f[i] || !near(s[i], want, 1e-9) {
			t.Errorf("row %d: %v, want %v", i, s[i], want)
		}
	}
}
