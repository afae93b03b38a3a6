package gradcheck_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

func randn(r *rand.Rand, rows, cols int) *tensor.Matrix { return gradcheck.Projection(r, rows, cols) }

// awayFromZero pushes every value at least d from 0, so that a central
// difference never straddles a ReLU kink.
func awayFromZero(m *tensor.Matrix, d float32) {
	for i, v := range m.Data {
		if v >= 0 && v < d {
			m.Data[i] = v + d
		} else if v < 0 && v > -d {
			m.Data[i] = v - d
		}
	}
}

func TestDenseGradients(t *testing.T) {
	for _, tc := range []struct {
		name       string
		b, in, out int
		init       nn.Init
	}{
		{"he 5x7x3", 5, 7, 3, nn.HeNormal},
		{"glorot 4x3x1", 4, 3, 1, nn.GlorotUniform},
		{"one row", 1, 6, 4, nn.HeNormal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 1))
			d := nn.NewDense(tc.in, tc.out, tc.init, r)
			for i := range d.B.Data {
				d.B.Data[i] = float32(r.NormFloat64())
			}
			x := randn(r, tc.b, tc.in)
			p := randn(r, tc.b, tc.out)
			loss := func() float64 { return gradcheck.Project(p, d.Forward(x)) }
			loss()
			dx := d.Backward(p).Clone()
			dW, dB := d.Params()[0].G.Clone(), d.Params()[1].G.Clone()
			for _, c := range []struct {
				what    string
				x, grad []float32
			}{{"dx", x.Data, dx.Data}, {"dW", d.W.Data, dW.Data}, {"db", d.B.Data, dB.Data}} {
				if err := gradcheck.Check(c.what, loss, c.x, c.grad, nil, 1e-2, gradcheck.Default); err != nil {
					t.Error(err)
				}
			}
			if got := d.InputGrad(p); !equal(got, dx) {
				t.Error("InputGrad differs from Backward's input gradient")
			}
		})
	}
}

func equal(a, b *tensor.Matrix) bool {
	if !tensor.SameShape(a, b) {
		return false
	}
	for i := range a.Data {
		if a.Data[i] != b.Data[i] {
			return false
		}
	}
	return true
}

func TestReLUGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 1))
	var l nn.ReLU
	x := randn(r, 6, 9)
	awayFromZero(x, 0.05)
	p := randn(r, 6, 9)
	loss := func() float64 { return gradcheck.Project(p, l.Forward(x)) }
	loss()
	dx := l.Backward(p).Clone()
	if err := gradcheck.Check("relu dx", loss, x.Data, dx.Data, nil, 1e-3, gradcheck.Default); err != nil {
		t.Error(err)
	}
}

// TestChainGradients checks Dense→ReLU→Dense→ReLU→Dense as a model would
// chain them, including every parameter.
func TestChainGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 1))
	layers := []nn.Layer{nn.NewDense(5, 8, nn.HeNormal, r), &nn.ReLU{}, nn.NewDense(8, 6, nn.HeNormal, r), &nn.ReLU{}, nn.NewDense(6, 2, nn.GlorotUniform, r)}
	x := randn(r, 7, 5)
	p := randn(r, 7, 2)
	loss := func() float64 {
		h := x
		for _, l := range layers {
			h = l.Forward(h)
		}
		return gradcheck.Project(p, h)
	}
	loss()
	g := p
	for i := len(layers) - 1; i >= 0; i-- {
		g = layers[i].Backward(g)
	}
	dx := g.Clone()
	if err := gradcheck.Check("chain dx", loss, x.Data, dx.Data, nil, 1e-3, gradcheck.Default); err != nil {
		t.Error(err)
	}
	for li, l := range layers {
		for _, prm := range l.Params() {
			grad := prm.G.Clone()
			if err := gradcheck.Check(prm.Name, loss, prm.W.Data, grad.Data, nil, 1e-3, gradcheck.Default); err != nil {
				t.Errorf("layer %d: %v", li, err)
			}
		}
	}
}

func TestEmbeddingGradients(t *testing.T) {
	for _, tc := range []struct {
		name string
		dim  int
		l2   float32
	}{{"dim 4, no L2", 4, 0}, {"dim 4, L2 0.01", 4, 0.01}, {"dim 1, L2 0.5", 1, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(4, 1))
			cards := []int{3, 5, 2}
			e, err := nn.NewEmbedding(cards, tc.dim, 0.5, r)
			if err != nil {
				t.Fatal(err)
			}
			e.L2 = tc.l2
			// Six rows; field 0's id 1 and field 2's id 0 repeat, field 1's id 4 never appears.
			ids := []int32{1, 0, 0, 1, 2, 0, 2, 3, 1, 1, 1, 0, 0, 0, 0, 1, 3, 0}
			const rows, col0 = 6, 2
			out := tensor.New(rows, col0+e.Width()+1)
			p := randn(r, rows, out.Cols)
			loss := func() float64 {
				if err := e.Lookup(ids, rows, out, col0); err != nil {
					t.Fatal(err)
				}
				return gradcheck.Project(p, out) + e.RegLoss()
			}
			loss()
			e.Backward(p, col0)
			if e.Touched() != 9 {
				t.Errorf("touched %d rows, want 9 distinct", e.Touched())
			}
			for f, c := range cards {
				for k := range c {
					g := e.Grad(f, k)
					used := false
					for i := range rows {
						used = used || ids[i*len(cards)+f] == int32(k)
					}
					if g == nil {
						if used {
							t.Errorf("field %d id %d: no gradient though the batch uses it", f, k)
						}
						continue
					}
					if !used {
						t.Errorf("field %d id %d: gradient for an unused row", f, k)
					}
					name := fmt.Sprintf("embedding field %d id %d", f, k)
					if err := gradcheck.Check(name, loss, e.Weight(f, k), append([]float32(nil), g...), nil, 1e-2, gradcheck.Default); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
}

func TestSigmoidBCEGradient(t *testing.T) {
	logits := []float32{-30, -4, -0.5, 0, 0.3, 2, 9, 25}
	labels := make([]float32, len(logits))
	for i := range labels {
		labels[i] = float32(i % 2)
	}
	labels[3] = 0.25 // a soft label
	d := make([]float32, len(logits))
	loss := func() float64 {
		l, err := nn.SigmoidBCE(logits, labels, make([]float32, len(logits)))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if _, err := nn.SigmoidBCE(logits, labels, d); err != nil {
		t.Fatal(err)
	}
	if err := gradcheck.Check("dLogits", loss, logits, d, nil, 1e-3, gradcheck.Tol{Rel: 1e-3, Floor: 1e-3}); err != nil {
		t.Error(err)
	}
}

// TestCheckCanFail makes sure the tolerances reject wrong gradients: a
// few percent off, a sign flip in one component, a transposed weight grad.
func TestCheckCanFail(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 1))
	d := nn.NewDense(4, 4, nn.HeNormal, r)
	x, p := randn(r, 3, 4), randn(r, 3, 4)
	loss := func() float64 { return gradcheck.Project(p, d.Forward(x)) }
	loss()
	d.Backward(p)
	good := d.Params()[0].G.Clone()
	num := gradcheck.Numeric(loss, d.W.Data, nil, 1e-2)
	if err := gradcheck.Compare("dW", good.Data, num, nil, gradcheck.Default); err != nil {
		t.Fatalf("correct gradient rejected: %v", err)
	}
	big := 0
	for i, v := range good.Data {
		if math.Abs(float64(v)) > math.Abs(float64(good.Data[big])) {
			big = i
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(g []float32)
	}{
		{"scaled by 1.05", func(g []float32) {
			for i := range g {
				g[i] *= 1.05
			}
		}},
		{"largest component off by 3%", func(g []float32) { g[big] *= 1.03 }},
		{"one sign flipped", func(g []float32) { g[big] = -g[big] }},
		{"transposed", func(g []float32) {
			c := append([]float32(nil), g...)
			for i := range 4 {
				for j := range 4 {
					g[i*4+j] = c[j*4+i]
				}
			}
		}},
	} {
		bad := good.Clone()
		tc.mutate(bad.Data)
		if gradcheck.Compare("dW", bad.Data, num, nil, gradcheck.Default) == nil {
			t.Errorf("%s: wrong gradient accepted", tc.name)
		}
	}
}
