package protect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// dcorDirect computes the squared distance correlation of Székely et al.
// from its definition: dCov²(u, v) = (1/n²)·Σ_ij A_ij·B_ij with A, B the
// double-centred distance matrices (each entry a_ij − ā_i· − ā_·j + ā··
// written out), dCor = dCov²(x, e)/sqrt(dCov²(x, x)·dCov²(e, e)); the
// features' distance is the Euclidean one of dense values plus one per
// differing categorical column.
func dcorDirect(x [][]float64, cat [][]int32, e [][]float64) float64 {
	n := len(e)
	dist := func(i, j int, rows [][]float64, c [][]int32) float64 {
		var s float64
		for k := range rows[i] {
			s += (rows[i][k] - rows[j][k]) * (rows[i][k] - rows[j][k])
		}
		if c != nil {
			for k := range c[i] {
				if c[i][k] != c[j][k] {
					s++
				}
			}
		}
		return math.Sqrt(s)
	}
	centred := func(rows [][]float64, c [][]int32) [][]float64 {
		d := make([][]float64, n)
		for i := range d {
			d[i] = make([]float64, n)
			for j := range d[i] {
				d[i][j] = dist(i, j, rows, c)
			}
		}
		ri, cj := make([]float64, n), make([]float64, n)
		var all float64
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				ri[i] += d[i][j] / float64(n)
				cj[j] += d[i][j] / float64(n)
				all += d[i][j] / float64(n*n)
			}
		}
		out := make([][]float64, n)
		for i := range out {
			out[i] = make([]float64, n)
			for j := range out[i] {
				out[i][j] = d[i][j] - ri[i] - cj[j] + all
			}
		}
		return out
	}
	a, b := centred(x, cat), centred(e, nil)
	cov := func(u, v [][]float64) float64 {
		var s float64
		for i := range u {
			for j := range u[i] {
				s += u[i][j] * v[i][j]
			}
		}
		return s / float64(n*n)
	}
	return cov(a, b) / math.Sqrt(cov(a, a)*cov(b, b))
}

// nopeekCase draws n rows of 3 dense features, 2 categorical ones and a
// 4-dimensional embedding that depends on them.
func nopeekCase(n int, seed uint64) (x [][]float64, cat [][]int32, e [][]float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < n; i++ {
		xi := []float64{rng.Float64(), rng.Float64(), rng.Float64()}
		ci := []int32{int32(rng.IntN(3)), int32(rng.IntN(2))}
		ei := []float64{xi[0] + 0.1*rng.NormFloat64(), xi[1] * xi[2], float64(ci[0]), rng.NormFloat64()}
		x, cat, e = append(x, xi), append(cat, ci), append(e, ei)
	}
	return x, cat, e
}

func toMatrix(rows [][]float64) *tensor.Matrix {
	m := tensor.New(len(rows), len(rows[0]))
	for i, r := range rows {
		for j, v := range r {
			m.Data[i*m.Cols+j] = float32(v)
		}
	}
	return m
}

func flatCat(cat [][]int32) []int32 {
	var out []int32
	for _, c := range cat {
		out = append(out, c...)
	}
	return out
}

// layerGrad runs NoPeek's training forward on (x, cat, e) and returns its
// loss and the gradient it adds to a zero received gradient.
func layerGrad(t *testing.T, n *NoPeek, x [][]float64, cat [][]int32, e [][]float64) (float64, *tensor.Matrix) {
	t.Helper()
	n.SetFeatures(toMatrix(x), flatCat(cat), len(cat[0]))
	em := toMatrix(e)
	out, err := n.Forward(em, true)
	if err != nil {
		t.Fatal(err)
	}
	if out != em {
		t.Fatal("NoPeek changed the embedding it sends")
	}
	g, err := n.Backward(tensor.New(em.Rows, em.Cols))
	if err != nil {
		t.Fatal(err)
	}
	return n.RegLoss(), g.Clone()
}

func TestNoPeekMatchesDefinitionAndFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		rows  int
		alpha float64
	}{{2, 1}, {5, 0.5}, {16, 2}} {
		x, cat, e := nopeekCase(tc.rows, uint64(tc.rows))
		n, err := NewNoPeek(tc.alpha)
		if err != nil {
			t.Fatal(err)
		}
		for _, rows := range [][][]float64{x, e} { // the layer sees float32 values
			for _, r := range rows {
				for k, v := range r {
					r[k] = float64(float32(v))
				}
			}
		}
		loss, g := layerGrad(t, n, x, cat, e)
		want := tc.alpha * dcorDirect(x, cat, e)
		if math.Abs(loss-want) > 1e-9 {
			t.Errorf("%d rows: loss %g, the definition gives %g", tc.rows, loss, want)
		}
		const h = 1e-6
		for i := range e {
			for k := range e[i] {
				old := e[i][k]
				e[i][k] = old + h
				up := dcorDirect(x, cat, e)
				e[i][k] = old - h
				down := dcorDirect(x, cat, e)
				e[i][k] = old
				fd := tc.alpha * (up - down) / (2 * h)
				if got := float64(g.Data[i*g.Cols+k]); math.Abs(got-fd) > 1e-4*(1+math.Abs(fd)) {
					t.Errorf("%d rows: ∂/∂e[%d][%d] = %g, finite differences %g", tc.rows, i, k, got, fd)
				}
			}
		}
	}
}

func TestNoPeekDescentDecorrelates(t *testing.T) {
	// The defining property: descending NoPeek's gradient alone moves the
	// embedding away from the features: dCor(x, e) falls.
	x, cat, e := nopeekCase(32, 3)
	n, err := NewNoPeek(1)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := layerGrad(t, n, x, cat, e)
	last := first
	for range 200 {
		var g *tensor.Matrix
		last, g = layerGrad(t, n, x, cat, e)
		for i := range e {
			for k := range e[i] {
				e[i][k] -= 0.5 * float64(g.Data[i*g.Cols+k])
			}
		}
	}
	if !(last < first/2) {
		t.Fatalf("dCor(x, e) went from %g to %g under NoPeek's gradient, want below half", first, last)
	}
	t.Logf("dCor(x, e) %.3f → %.3f", first, last)
}

func TestNoPeekRefusals(t *testing.T) {
	for _, a := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := NewNoPeek(a); err == nil {
			t.Errorf("α = %v accepted", a)
		}
	}
	n, _ := NewNoPeek(1)
	if _, err := n.Backward(tensor.New(2, 2)); err == nil {
		t.Error("a backward before any training forward was accepted")
	}
	n.SetFeatures(tensor.New(3, 1), nil, 0)
	if _, err := n.Forward(tensor.New(2, 2), true); err == nil {
		t.Error("features of 3 rows for a 2-row embedding were accepted")
	}
}
