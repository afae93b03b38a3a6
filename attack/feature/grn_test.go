package feature

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// linearJoint is a joint model whose logit is 3·e − 3 + a, e the 1-wide
// embedding and a the active's one own dense column.
type linearJoint struct{ grad tensor.Matrix }

func (j *linearJoint) Forward(e *tensor.Matrix, own *data.Batch) ([]float32, error) {
	out := make([]float32, e.Rows)
	for i := range out {
		out[i] = 3*e.Data[i] - 3 + own.Dense.Data[i]
	}
	return out, nil
}

func (j *linearJoint) Backward(d []float32) (*tensor.Matrix, error) {
	j.grad.Resize(len(d), 1)
	for i, v := range d {
		j.grad.Data[i] = 3 * v
	}
	return &j.grad, nil
}

// TestGRNRecoversWhatThePredictionsDetermine: the passive holds x₁ and
// x₂, its bottom sends e = 2·x₁ (it ignores x₂), the joint model's logit
// is 3e − 3 + a with the active's own column a. From the outputs and a,
// x₁ = (v + 3 − a)/6 is determined, and the generator must find it (R²
// near 1, computed here); x₂ leaves no trace in the outputs, and its
// guess must be no better than the prior (R² near 0). Without the joint
// model it guesses the prior exactly.
func TestGRNRecoversWhatThePredictionsDetermine(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	mk := func(n int) (*data.Features, *data.Features, *tensor.Matrix, []float32) {
		x := &data.Features{Rows: n, NumDense: 2}
		own := &data.Features{Rows: n, NumDense: 1}
		e := tensor.New(n, 1)
		v := make([]float32, n)
		for i := range n {
			x1, x2, a := float32(r.Float64()), float32(r.Float64()), float32(r.Float64()-0.5)
			x.Dense = append(x.Dense, x1, x2)
			own.Dense = append(own.Dense, a)
			e.Data[i] = 2 * x1
			v[i] = 6*x1 - 3 + a
		}
		return x, own, e, v
	}
	auxX, auxOwn, auxE, _ := mk(300)
	evX, evOwn, evE, scores := mk(400)
	in := &Input{AuxTruth: auxX, AuxEmbed: auxE, EvalEmbed: evE, AuxOwn: auxOwn, EvalOwn: evOwn, Seed: 3,
		Joint: &linearJoint{}, JointOwn: true, EvalScores: scores}
	a, err := New("grn") // the registered defaults
	if err != nil {
		t.Fatal(err)
	}
	g := a.(*GRN)
	guess, err := g.Reconstruct(in)
	if err != nil {
		t.Fatal(err)
	}
	r2 := func(col int) float64 {
		var mean float64
		for i := range evX.Rows {
			mean += float64(evX.Dense[i*2+col])
		}
		mean /= float64(evX.Rows)
		var sse, sst float64
		for i := range evX.Rows {
			tr, gu := float64(evX.Dense[i*2+col]), float64(guess.Dense[i*2+col])
			sse += (gu - tr) * (gu - tr)
			sst += (tr - mean) * (tr - mean)
		}
		return 1 - sse/sst
	}
	t.Logf("R² x₁ %.3f, x₂ %.3f", r2(0), r2(1))
	if r2(0) < 0.9 {
		t.Errorf("x₁, which the outputs determine: R² %.3f, want ≥ 0.9", r2(0))
	}
	if r2(1) > 0.1 {
		t.Errorf("x₂, which leaves no trace in the outputs: R² %.3f, want ≤ 0.1", r2(1))
	}
	in.Joint = nil
	prior, err := g.Reconstruct(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < prior.Rows; i++ {
		if prior.Dense[i*2] != prior.Dense[0] || prior.Dense[i*2+1] != prior.Dense[1] {
			t.Fatal("without the joint model the guess is not the prior")
		}
	}
	if m := math.Abs(float64(prior.Dense[0]) - 0.5); m > 0.1 {
		t.Errorf("the prior guess of x₁ is %v, the auxiliary mean is near ½", prior.Dense[0])
	}
}
