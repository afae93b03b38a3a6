package gradcheck_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// TestGateGradients: the gate's input and θ gradients against central
// differences, at θ = 0 (the mean) and at θ away from it.
func TestGateGradients(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b, k, d int
		theta   []float32
	}{
		{"mean of 2", 5, 2, 3, nil},
		{"3 blocks, skewed", 4, 3, 4, []float32{0.7, -1.2, 0.3}},
		{"one row, one column", 1, 4, 1, []float32{2, 0, -1, 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			g, err := nn.NewGate(tc.k, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			theta := g.Params()[0].W
			copy(theta.Data, tc.theta)
			x := randn(r, tc.b, tc.k*tc.d)
			p := randn(r, tc.b, tc.d)
			loss := func() float64 { return gradcheck.Project(p, g.Forward(x)) }
			loss()
			dx := g.Backward(p).Clone()
			dTheta := g.Params()[0].G.Clone()
			if err := gradcheck.Check("dx", loss, x.Data, dx.Data, nil, 1e-2, gradcheck.Default); err != nil {
				t.Error(err)
			}
			if err := gradcheck.Check("dθ", loss, theta.Data, dTheta.Data, nil, 1e-2, gradcheck.Default); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestGateHandCase: two blocks, θ = (ln 3, 0), so α = (¾, ¼); x = [1 2 |
// 5 6] gives y = [2 3]; with ∂L/∂y = [1 1]: s = (3, 11), Σα·s = 5,
// ∂θ = (¾·(3−5), ¼·(11−5)) = (−1.5, 1.5), ∂x = [¾ ¾ | ¼ ¼].
func TestGateHandCase(t *testing.T) {
	g, err := nn.NewGate(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	g.Params()[0].W.Data[0] = float32(math.Log(3))
	x := &tensor.Matrix{Rows: 1, Cols: 4, Data: []float32{1, 2, 5, 6}}
	y := g.Forward(x)
	dy := &tensor.Matrix{Rows: 1, Cols: 2, Data: []float32{1, 1}}
	dx := g.Backward(dy)
	near := func(a float32, b float64) bool { return math.Abs(float64(a)-b) < 1e-6 }
	for i, want := range []float64{2, 3} {
		if !near(y.Data[i], want) {
			t.Errorf("y[%d] = %v, want %v", i, y.Data[i], want)
		}
	}
	for i, want := range []float64{0.75, 0.75, 0.25, 0.25} {
		if !near(dx.Data[i], want) {
			t.Errorf("dx[%d] = %v, want %v", i, dx.Data[i], want)
		}
	}
	for i, want := range []float64{-1.5, 1.5} {
		if got := g.Params()[0].G.Data[i]; !near(got, want) {
			t.Errorf("dθ[%d] = %v, want %v", i, got, want)
		}
	}
	if _, err := nn.NewGate(1, 3); err == nil {
		t.Error("a gate over one block was accepted")
	}
}
