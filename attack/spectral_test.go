package attack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gmat "gonum.org/v1/gonum/mat"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

func sse(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s
}

func TestTwoMeans1DHand(t *testing.T) {
	for _, tc := range []struct {
		x  []float64
		m  int
		ok bool
	}{
		{[]float64{0, 1, 10}, 2, true},
		{[]float64{0, 9, 10}, 1, true},
		{[]float64{1, 1, 2}, 2, true},
		{[]float64{1, 2, 2}, 1, true},
		{[]float64{-3, -3, 4, 4, 4}, 2, true},
		{[]float64{1, 1, 1}, 0, false},
		{[]float64{5}, 0, false},
	} {
		m, ok := TwoMeans1D(tc.x)
		if m != tc.m || ok != tc.ok {
			t.Errorf("TwoMeans1D(%v) = %d, %v; want %d, %v", tc.x, m, ok, tc.m, tc.ok)
		}
	}
}

// TestTwoMeans1DBruteForce compares with the minimum over every partition
// of the points into two non-empty sets (2ⁿ subsets).
func TestTwoMeans1DBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 300 {
		n := 2 + r.IntN(10)
		x := make([]float64, n)
		for i := range x {
			if trial%3 == 0 {
				x[i] = float64(r.IntN(4)) // ties
			} else {
				x[i] = r.NormFloat64() * math.Exp(r.NormFloat64())
			}
		}
		slices.Sort(x)
		m, ok := TwoMeans1D(x)
		if x[0] == x[n-1] {
			if ok {
				t.Fatalf("%v: split %d of constant values", x, m)
			}
			continue
		}
		best := math.Inf(1)
		var a, b []float64
		for mask := 1; mask < 1<<n-1; mask++ {
			a, b = a[:0], b[:0]
			for i := range n {
				if mask>>i&1 == 1 {
					a = append(a, x[i])
				} else {
					b = append(b, x[i])
				}
			}
			best = min(best, sse(a)+sse(b))
		}
		got := sse(x[:m]) + sse(x[m:])
		if !ok || got > best+1e-9*(1+best) {
			t.Fatalf("%v: split at %d has SSE %v, brute force %v", x, m, got, best)
		}
	}
}

// clusters returns B rows in d dimensions: a fraction frac of positives
// around +sep·u and the rest around the origin, unit noise.
func clusters(r *rand.Rand, b, d int, frac, sep float64) (*tensor.Matrix, []uint8) {
	e := tensor.New(b, d)
	labels := make([]uint8, b)
	u := make([]float64, d)
	for j := range u {
		u[j] = r.NormFloat64()
	}
	normalise(u)
	for i := range b {
		c := 0.0
		if float64(i) < frac*float64(b) {
			labels[i], c = 1, sep
		}
		for j := range d {
			e.Set(i, j, float32(3+c*u[j]+r.NormFloat64()))
		}
	}
	return e, labels
}

func TestSpectralRecoversSeparatedClusters(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		frac     float64
		minority bool
	}{
		{0.1, true},
		{0.1, false}, // larger mean |s| is the far, small cluster
		{0.3, false},
	} {
		for rep := range 4 {
			e, labels := clusters(r, 600, 16, tc.frac, 12)
			if rep%2 == 1 { // flip the geometry: negatives far off instead
				for i := range e.Data {
					e.Data[i] = -e.Data[i]
				}
			}
			s, f := score(t, "spectral", &Observation{X: e, PositivesMinority: tc.minority})
			if auc, ok := metrics.AUC(s, labels, f); !ok || auc != 1 {
				t.Errorf("frac %v minority %v rep %d: AUC %v, want 1", tc.frac, tc.minority, rep, auc)
			}
		}
	}
}

func TestSpectralOrientation(t *testing.T) {
	// 1-D: three points at 10 and seven at 0, centred s ∝ ±(7, −3).
	e := tensor.New(10, 1)
	for i := range 3 {
		e.Data[i] = 10
	}
	labelsSmallHigh := []uint8{1, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	s, _ := score(t, "spectral", &Observation{X: e, PositivesMinority: true})
	if !(s[0] > s[5]) || s[0] != s[1] {
		t.Errorf("minority prior: small cluster scores %v, big %v; want higher", s[0], s[5])
	}
	// Without the prior the small cluster also wins: mean |s| 7 > 3.
	s, _ = score(t, "spectral", &Observation{X: e})
	if auc, _ := metrics.AUC(s, labelsSmallHigh, nil); auc != 1 {
		t.Errorf("larger-|s| rule: AUC %v", auc)
	}
	// Minority prior with equal sizes falls back to the |s| rule; with
	// centred values and equal sizes the two mean |s| tie when no cluster
	// straddles 0, so the orientation is the arbitrary sign of v: require
	// only a clean split.
	e2 := mat([]float32{10}, []float32{10}, []float32{10}, []float32{0}, []float32{0.1}, []float32{-0.1})
	s, _ = score(t, "spectral", &Observation{X: e2, PositivesMinority: true})
	if auc, _ := metrics.AUC(s, []uint8{1, 1, 1, 0, 0, 0}, nil); auc != 1 && auc != 0 {
		t.Errorf("equal sizes: AUC %v, want a clean split", auc)
	}
}

func TestSpectralConstantEmbedding(t *testing.T) {
	e := tensor.New(50, 8)
	for i := range e.Data {
		e.Data[i] = 2.5
	}
	labels := make([]uint8, 50)
	labels[3], labels[7] = 1, 1
	for _, x := range []*tensor.Matrix{e, tensor.New(1, 4), tensor.New(0, 4)} {
		s, f := score(t, "spectral", &Observation{X: x, PositivesMinority: true})
		for i := range s {
			if s[i] != 0 || !f[i] {
				t.Fatalf("%d×%d constant: row %d score %v scored %v", x.Rows, x.Cols, i, s[i], f[i])
			}
		}
		if x.Rows == 50 {
			if auc, _ := metrics.AUC(s, labels, f); auc != 0.5 {
				t.Errorf("constant embedding AUC %v, want 0.5", auc)
			}
		}
	}
}

// TestSpectralTopDirection checks the power iteration against gonum's
// symmetric eigendecomposition of the same centred covariance.
func TestSpectralTopDirection(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{1, 5, 32} {
		x := tensor.New(200, d)
		for i := range 200 {
			for j := range d {
				x.Set(i, j, float32(r.NormFloat64()*(1+float64(j%4))+5))
			}
		}
		a := &Spectral{}
		s := make([]float64, 200)
		f := make([]bool, 200)
		if err := a.Score(&Observation{X: x}, s, f); err != nil {
			t.Fatal(err)
		}
		// Reference in float64 from the raw data.
		mean := make([]float64, d)
		for i := range 200 {
			for j := range d {
				mean[j] += float64(x.At(i, j)) / 200
			}
		}
		c := gmat.NewSymDense(d, nil)
		for p := range d {
			for q := p; q < d; q++ {
				var v float64
				for i := range 200 {
					v += (float64(x.At(i, p)) - mean[p]) * (float64(x.At(i, q)) - mean[q])
				}
				c.SetSym(p, q, v)
			}
		}
		var eig gmat.EigenSym
		if !eig.Factorize(c, true) {
			t.Fatal("EigenSym failed")
		}
		var vecs gmat.Dense
		eig.VectorsTo(&vecs)
		top := gmat.Col(nil, d-1, &vecs) // ascending eigenvalues
		var cos float64
		for j := range d {
			cos += top[j] * a.v[j]
		}
		if math.Abs(cos) < 1-1e-6 {
			t.Errorf("d=%d: |cos(v, reference)| = %v after %d iterations", d, math.Abs(cos), a.Iterations)
		}
	}
}

func TestMultiClassAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	sizes := map[uint8]int{2: 50, 0: 30, 1: 20, 4: 10}
	centres := map[uint8][]float64{2: {0, 0, 0}, 0: {20, 0, 0}, 1: {0, 20, 0}, 4: {0, 0, 20}}
	var labels []uint8
	for _, c := range []uint8{0, 1, 2, 4} {
		for range sizes[c] {
			labels = append(labels, c)
		}
	}
	r.Shuffle(len(labels), func(i, j int) { labels[i], labels[j] = labels[j], labels[i] })
	e := tensor.New(len(labels), 3)
	for i, y := range labels {
		for j := range 3 {
			e.Set(i, j, float32(centres[y][j]+r.NormFloat64()))
		}
	}
	acc, err := MultiClassAccuracy(e, labels, rand.New(rand.NewPCG(1, 2)))
	if err != nil || acc != 1 {
		t.Fatalf("separated clusters: accuracy %v, %v; want 1", acc, err)
	}
	// Matching is by size, not by majority vote: blob A (60 rows) holds
	// 40 rows of class 0 and 20 of class 1, blob B (40 rows) 40 of class
	// 1. Class 1 (60 rows) goes to blob A, class 0 (40) to blob B, so only
	// A's 20 class-1 rows are right: accuracy 0.2 (a majority vote would
	// give 0.8).
	e2 := tensor.New(100, 2)
	mixed := make([]uint8, 100)
	for i := range 100 {
		cx := 0.0
		if i >= 60 {
			cx = 30
		}
		if i >= 40 {
			mixed[i] = 1
		}
		e2.Set(i, 0, float32(cx+r.NormFloat64()))
		e2.Set(i, 1, float32(r.NormFloat64()))
	}
	acc, err = MultiClassAccuracy(e2, mixed, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !near(acc, 0.2, 1e-12) {
		t.Errorf("size matching: accuracy %v, %v; want 0.2", acc, err)
	}
	a1, _ := MultiClassAccuracy(e, labels, rand.New(rand.NewPCG(7, 7)))
	a2, _ := MultiClassAccuracy(e, labels, rand.New(rand.NewPCG(7, 7)))
	if a1 != a2 {
		t.Error("not deterministic for a seed")
	}
	if _, err := MultiClassAccuracy(e, labels[:5], r); err == nil {
		t.Error("length mismatch: no error")
	}
	if err := KMeans(e, 0, r, make([]int, e.Rows)); err == nil {
		t.Error("k = 0: no error")
	}
}

// TestSpectralTopDirectionWide checks the n < d path (power iteration on
// EEᵀ, then v = Eᵀu/‖Eᵀu‖) against gonum's eigendecomposition of the d×d
// covariance EᵀE, and that every row's score is its projection on v.
func TestSpectralTopDirectionWide(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	const n, d = 40, 100
	x := tensor.New(n, d)
	dir := make([]float64, d)
	for j := range dir {
		dir[j] = r.NormFloat64()
	}
	for i := range n {
		c := 3 * r.NormFloat64()
		for j := range d {
			x.Set(i, j, float32(c*dir[j]+r.NormFloat64()+2))
		}
	}
	a := &Spectral{}
	s := make([]float64, n)
	f := make([]bool, n)
	if err := a.Score(&Observation{X: x}, s, f); err != nil {
		t.Fatal(err)
	}
	mean := make([]float64, d)
	for i := range n {
		for j := range d {
			mean[j] += float64(x.At(i, j)) / n
		}
	}
	c := gmat.NewSymDense(d, nil)
	for p := range d {
		for q := p; q < d; q++ {
			var v float64
			for i := range n {
				v += (float64(x.At(i, p)) - mean[p]) * (float64(x.At(i, q)) - mean[q])
			}
			c.SetSym(p, q, v)
		}
	}
	var eig gmat.EigenSym
	if !eig.Factorize(c, true) {
		t.Fatal("EigenSym failed")
	}
	var vecs gmat.Dense
	eig.VectorsTo(&vecs)
	top := gmat.Col(nil, d-1, &vecs)
	var cos float64
	for j := range d {
		cos += top[j] * a.v[j]
	}
	if math.Abs(cos) < 1-1e-6 {
		t.Errorf("|cos(v, reference)| = %v after %d iterations", math.Abs(cos), a.Iterations)
	}
	// Scores are ±⟨E_i, v⟩ with one sign for all rows.
	sign := 0.0
	for i := range n {
		var p float64
		for j := range d {
			p += (float64(x.At(i, j)) - mean[j]) * a.v[j]
		}
		if sign == 0 && math.Abs(p) > 1e-3 {
			sign = math.Copysign(1, s[i]*p)
		}
		if math.Abs(s[i]-sign*p) > 1e-4*(1+math.Abs(p)) {
			t.Fatalf("row %d: score %v, projection %v", i, s[i], p)
		}
	}
}

// TestSpectralComponents: when the classes differ along the second
// principal direction only (the first is label-free noise of larger
// variance), the one-component attack is near chance and the
// two-component one separates them; its second direction is the second
// eigenvector of EᵀE, computed independently with gonum's EigenSym.
//
// Both of the attack's paths: a batch taller than the layer (the
// iteration on EᵀE) and one narrower (n < d: through E, with further
// columns of tiny label-free noise).
func TestSpectralComponents(t *testing.T) {
	for _, tc := range []struct{ n, d int }{{400, 4}, {40, 60}} {
		t.Run(fmt.Sprintf("n=%d,d=%d", tc.n, tc.d), func(t *testing.T) { spectralComponentsCase(t, tc.n, tc.d) })
	}
}

func spectralComponentsCase(t *testing.T, n, d int) {
	r := rand.New(rand.NewPCG(21, 22))
	x := tensor.New(n, d)
	y := make([]uint8, n)
	for i := range n {
		if r.Float64() < 0.3 {
			y[i] = 1
		}
		row := x.Row(i)
		row[0] = float32(6 * r.NormFloat64())
		row[1] = float32(0.4*r.NormFloat64() + 2*float64(y[i]))
		row[2] = float32(0.3 * r.NormFloat64())
		row[3] = float32(0.2 * r.NormFloat64())
		for j := 4; j < d; j++ {
			row[j] = float32(0.01 * r.NormFloat64())
		}
	}
	obs := &Observation{Layer: "cut", X: x, PositivesMinority: true}
	one, _ := score(t, "spectral", obs)
	a := &Spectral{Components: 2}
	two, f := make([]float64, n), make([]bool, n)
	if err := a.Score(obs, two, f); err != nil {
		t.Fatal(err)
	}
	auc1, _ := metrics.AUC(one, y, nil)
	auc2, _ := metrics.AUC(two, y, nil)
	// A label-free score's AUC is ½ within three of its standard
	// deviations under the null, √((n₁+n₀+1)/(12·n₁·n₀)).
	var n1 float64
	for _, v := range y {
		n1 += float64(v)
	}
	chance := 3 * math.Sqrt((float64(n)+1)/(12*n1*(float64(n)-n1)))
	if math.Abs(auc1-0.5) > chance || auc2 < 0.99 {
		t.Errorf("AUC with one component %.3f (want ≈ ½), with two %.3f (want ≈ 1)", auc1, auc2)
	}
	// The second direction against EigenSym of the centred EᵀE.
	c := gmat.NewSymDense(d, nil)
	mean := make([]float64, d)
	for i := range n {
		for j := range d {
			mean[j] += float64(x.Row(i)[j]) / float64(n)
		}
	}
	for i := range n {
		for p := range d {
			for q := p; q < d; q++ {
				c.SetSym(p, q, c.At(p, q)+(float64(x.Row(i)[p])-mean[p])*(float64(x.Row(i)[q])-mean[q]))
			}
		}
	}
	var eig gmat.EigenSym
	if !eig.Factorize(c, true) {
		t.Fatal("EigenSym failed")
	}
	var vecs gmat.Dense
	eig.VectorsTo(&vecs) // ascending eigenvalues: the second largest is column d−2
	var cos float64
	for j := range d {
		cos += vecs.At(j, d-2) * a.dirs[d+j]
	}
	if math.Abs(cos) < 0.9999 {
		t.Errorf("second direction %v, EigenSym's %v (cos %v)", a.dirs[d:2*d], gmat.Col(nil, d-2, &vecs), cos)
	}
}
