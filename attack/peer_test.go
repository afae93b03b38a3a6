package attack

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// oppositeBatch builds gradients of a batch in which positives point along
// −u and negatives along +u (observations 3–4 of [Li22]), with noise of
// size noise, and positives the minority (share pos).
func oppositeBatch(r *rand.Rand, n, d int, pos, noise float64) (*tensor.Matrix, []uint8) {
	u := make([]float64, d)
	for j := range u {
		u[j] = r.NormFloat64()
	}
	normalise(u)
	g := tensor.New(n, d)
	y := make([]uint8, n)
	for i := range n {
		a := 0.2 + 0.3*r.Float64()
		if r.Float64() < pos {
			y[i], a = 1, -(0.6 + 0.3*r.Float64())
		}
		for j, v := range u {
			g.Row(i)[j] = float32(a*v + noise*r.NormFloat64()/math.Sqrt(float64(d)))
		}
	}
	return g, y
}

func TestSpectralGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 9))
	g, y := oppositeBatch(r, 256, 16, 0.2, 0.05)
	s, f := score(t, "spectral_grad", &Observation{Layer: "cut", X: g, PositivesMinority: true})
	if auc, _ := metrics.AUC(s, y, f); auc != 1 {
		t.Errorf("spectral_grad AUC %.4f on opposite-direction gradients, want 1", auc)
	}
	bad := tensor.New(2, 2)
	bad.Data[3] = float32(math.Inf(1))
	a, _ := New("spectral_grad")
	if err := a.Score(&Observation{Layer: "cut", X: bad}, make([]float64, 2), make([]bool, 2)); err == nil {
		t.Error("non-finite gradient: no error")
	}
}

// TestSimilarityHand checks the score against a hand computation: rows
// 0 (known positive, (1,0)) and 1 (known negative, (0,1)); row 2 = (1,1)
// has cosines 1/√2 with both: score 0; row 3 = (2,0): 1 − 0 = 1; row 4 =
// (0,−3): 0 − (−1) = 1; row 5 = 0: 0.
func TestSimilarityHand(t *testing.T) {
	x := &tensor.Matrix{Rows: 6, Cols: 2, Data: []float32{1, 0, 0, 1, 1, 1, 2, 0, 0, -3, 0, 0}}
	s, f := score(t, "similarity_grad", &Observation{Layer: "cut", X: x, Known: []int{0, 1}, KnownLabels: []uint8{1, 0}})
	want := []float64{0, 0, 0, 1, 1, 0}
	wantScored := []bool{false, false, true, true, true, true}
	for i := range want {
		if math.Abs(s[i]-want[i]) > 1e-12 || f[i] != wantScored[i] {
			t.Errorf("row %d: score %v scored %v, want %v %v", i, s[i], f[i], want[i], wantScored[i])
		}
	}
	// Only a positive known: the negative term is absent.
	s, _ = score(t, "similarity_embed", &Observation{Layer: "cut", X: x, Known: []int{3}, KnownLabels: []uint8{1}})
	if math.Abs(s[2]-1/math.Sqrt2) > 1e-7 || s[4] != 0 {
		t.Errorf("one known positive: scores %v", s)
	}
	a, _ := New("similarity_grad")
	for _, ob := range []*Observation{
		{Layer: "cut", X: x, Known: []int{0, 0}, KnownLabels: []uint8{1, 0}},
		{Layer: "cut", X: x, Known: []int{9}, KnownLabels: []uint8{1}},
		{Layer: "cut", X: x, Known: []int{1}, KnownLabels: []uint8{2}},
		{Layer: "cut", X: x, Known: []int{1}},
	} {
		if err := a.Score(ob, make([]float64, 6), make([]bool, 6)); err == nil {
			t.Errorf("known %v labels %v: no error", ob.Known, ob.KnownLabels)
		}
	}
}

// TestGradMatchLinearTop builds a batch whose gradient comes from a linear
// top under the mean BCE, g_i = (σ(⟨w*, e_i⟩ + c*) − y_i)·w*/B: gradient
// matching with a linear surrogate recovers every label (the sign of its
// score y_i − p_i).
func TestGradMatchLinearTop(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const n, d = 128, 12
	w := make([]float64, d)
	for j := range w {
		w[j] = 0.5 * r.NormFloat64()
	}
	c := -0.7
	e, g := tensor.New(n, d), tensor.New(n, d)
	y := make([]uint8, n)
	for i := range n {
		var z float64
		for j := range d {
			e.Row(i)[j] = float32(r.NormFloat64())
			z += float64(e.Row(i)[j]) * w[j]
		}
		if r.Float64() < 0.3 {
			y[i] = 1
		}
		delta := sigmoid(z+c) - float64(y[i])
		for j := range d {
			g.Row(i)[j] = float32(delta * w[j] / n)
		}
	}
	s, f := score(t, "grad_match", &Observation{Layer: "cut", X: g, Output: e, PositivesMinority: true})
	if auc, _ := metrics.AUC(s, y, f); auc != 1 {
		t.Errorf("AUC %.4f, want 1", auc)
	}
	// The score is y_i − p_i: positive exactly for the positives.
	for i, v := range s {
		if (v > 0) != (y[i] == 1) {
			t.Errorf("row %d: score %.3f, true label %d", i, v, y[i])
		}
	}
	a, _ := New("grad_match")
	if err := a.Score(&Observation{Layer: "cut", X: g}, make([]float64, n), make([]bool, n)); err == nil {
		t.Error("no output: no error")
	}
}

func TestGradMatchOpposite(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	g, y := oppositeBatch(r, 256, 16, 0.25, 0.1)
	e := tensor.New(256, 16)
	for k := range e.Data {
		e.Data[k] = float32(r.NormFloat64())
	}
	s, f := score(t, "grad_match", &Observation{Layer: "cut", X: g, Output: e, PositivesMinority: true})
	if auc, _ := metrics.AUC(s, y, f); auc < 0.99 {
		t.Errorf("AUC %.4f on opposite-direction gradients, want ≥ 0.99", auc)
	}
}
