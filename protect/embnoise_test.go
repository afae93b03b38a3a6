package protect

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func randMatrix(rows, cols int, scale float64, seed uint64) *tensor.Matrix {
	r := rand.New(rand.NewPCG(seed, 1))
	m := tensor.New(rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(scale * r.NormFloat64())
	}
	return m
}

func mustEmbNoise(t *testing.T, sigma, clip float64, seed, secret uint64) *EmbNoise {
	t.Helper()
	n, err := NewEmbNoise(sigma, clip, seed, secret)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEmbNoiseDistribution: zero rows are never clipped, so what is sent
// is the noise alone, whose mean and standard deviation must be 0 and σC.
func TestEmbNoiseDistribution(t *testing.T) {
	for _, c := range []struct{ sigma, clip float64 }{{0.5, 1}, {2, 0.1}, {1, 3}} {
		n := mustEmbNoise(t, c.sigma, c.clip, 7, 0)
		out, err := n.Forward(tensor.New(4000, 32), true)
		if err != nil {
			t.Fatal(err)
		}
		var s, ss float64
		for _, v := range out.Data {
			s += float64(v)
			ss += float64(v) * float64(v)
		}
		N := float64(len(out.Data))
		mean, sd := s/N, math.Sqrt(ss/N-(s/N)*(s/N))
		want := c.sigma * c.clip
		// 128,000 draws: the sample sd is within 1% of σC with
		// overwhelming probability, the mean within 4 standard errors.
		if math.Abs(sd/want-1) > 0.01 || math.Abs(mean) > 4*want/math.Sqrt(N) {
			t.Errorf("σ %v C %v: noise mean %.4g sd %.4g, want 0 and %.4g", c.sigma, c.clip, mean, sd, want)
		}
	}
}

// TestEmbNoiseClips: two layers with the same seed draw the same noise, so
// the difference of their outputs is the difference of the clipped rows,
// each row min(1, C/‖e‖)·e computed here.
func TestEmbNoiseClips(t *testing.T) {
	const clip = 1.5
	e1, e2 := randMatrix(50, 8, 1, 1), randMatrix(50, 8, 0.2, 2) // norms around 2.8 and 0.57
	a, b := mustEmbNoise(t, 0.3, clip, 9, 0), mustEmbNoise(t, 0.3, clip, 9, 0)
	o1, _ := a.Forward(e1, true)
	o2, _ := b.Forward(e2, true)
	clipped := func(m *tensor.Matrix, i int) []float64 {
		var n float64
		for _, v := range m.Row(i) {
			n += float64(v) * float64(v)
		}
		n = math.Sqrt(n)
		out := make([]float64, m.Cols)
		for j, v := range m.Row(i) {
			out[j] = float64(v) * math.Min(1, clip/n)
		}
		return out
	}
	sawClipped, sawUnclipped := false, false
	for i := range e1.Rows {
		c1, c2 := clipped(e1, i), clipped(e2, i)
		for j := range c1 {
			got := float64(o1.At(i, j)) - float64(o2.At(i, j))
			if math.Abs(got-(c1[j]-c2[j])) > 1e-5 {
				t.Fatalf("row %d col %d: outputs differ by %v, clipped rows by %v", i, j, got, c1[j]-c2[j])
			}
		}
		sawClipped = sawClipped || a.scale[i] < 1
		sawUnclipped = sawUnclipped || b.scale[i] == 1
	}
	if !sawClipped || !sawUnclipped {
		t.Fatalf("the test rows should include clipped and unclipped ones")
	}
}

// TestEmbNoiseBackwardFiniteDifferences checks Backward against central
// differences of L = Σ w ⊙ ẽ, the noise held fixed by rebuilding the layer
// with the same seed for every evaluation.
func TestEmbNoiseBackwardFiniteDifferences(t *testing.T) {
	const clip = 1.0
	e := randMatrix(6, 5, 0.6, 3) // norms about 1.3: some rows clipped, some not
	e.Data[0], e.Data[1] = 0.1, 0.1
	w := randMatrix(6, 5, 1, 4)
	loss := func(x *tensor.Matrix) float64 {
		n := mustEmbNoise(t, 0.2, clip, 5, 0)
		out, err := n.Forward(x, true)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for i, v := range out.Data {
			s += float64(v) * float64(w.Data[i])
		}
		return s
	}
	n := mustEmbNoise(t, 0.2, clip, 5, 0)
	if _, err := n.Forward(e, true); err != nil {
		t.Fatal(err)
	}
	g, err := n.Backward(w)
	if err != nil {
		t.Fatal(err)
	}
	aud, _ := n.Backprop(w)
	const h = 1e-3
	for i := range e.Data {
		x := tensor.New(e.Rows, e.Cols)
		copy(x.Data, e.Data)
		x.Data[i] += h
		up := loss(x)
		x.Data[i] -= 2 * h
		down := loss(x)
		fd := (up - down) / (2 * h)
		if math.Abs(fd-float64(g.Data[i])) > 2e-3*max(1, math.Abs(fd)) {
			t.Errorf("∂L/∂e[%d] = %v, finite difference %v", i, g.Data[i], fd)
		}
		if aud.Data[i] != g.Data[i] {
			t.Errorf("Backprop[%d] = %v, Backward %v", i, aud.Data[i], g.Data[i])
		}
	}
}

// TestEmbNoiseEvaluation: outside training a row's noise depends on the
// seed, the secret and the row only — the same query gets the same answer,
// another secret another one — and evaluations leave the training stream
// alone.
func TestEmbNoiseEvaluation(t *testing.T) {
	e := randMatrix(20, 8, 0.3, 6)
	a, b := mustEmbNoise(t, 1, 1, 3, 11), mustEmbNoise(t, 1, 1, 3, 11)
	ea, _ := a.Forward(e, false)
	ea = cloneMatrix(ea)
	// b sees the rows in another order and a training batch first.
	if _, err := b.Forward(randMatrix(5, 8, 1, 9), true); err != nil {
		t.Fatal(err)
	}
	rev := tensor.New(e.Rows, e.Cols)
	for i := range e.Rows {
		copy(rev.Row(e.Rows-1-i), e.Row(i))
	}
	eb, _ := b.Forward(rev, false)
	for i := range e.Rows {
		for j := range e.Cols {
			if ea.At(i, j) != eb.At(e.Rows-1-i, j) {
				t.Fatalf("row %d: evaluation noise depends on what came before", i)
			}
		}
	}
	other := mustEmbNoise(t, 1, 1, 3, 12)
	eo, _ := other.Forward(e, false)
	if ea.At(0, 0) == eo.At(0, 0) {
		t.Errorf("another secret gave the same evaluation noise")
	}
	// Training draws are the same with or without evaluations between them.
	c, d := mustEmbNoise(t, 1, 1, 3, 11), mustEmbNoise(t, 1, 1, 3, 11)
	c.Forward(e, false)
	tc, _ := c.Forward(e, true)
	td, _ := d.Forward(e, true)
	for i := range tc.Data {
		if tc.Data[i] != td.Data[i] {
			t.Fatalf("an evaluation changed the training noise")
		}
	}
}

func cloneMatrix(m *tensor.Matrix) *tensor.Matrix {
	c := tensor.New(m.Rows, m.Cols)
	copy(c.Data, m.Data)
	return c
}

// TestEmbNoiseResume: a layer restored from Save draws the same training
// noise as one that never stopped.
func TestEmbNoiseResume(t *testing.T) {
	e := randMatrix(10, 4, 1, 8)
	a := mustEmbNoise(t, 0.7, 2, 4, 0)
	a.Forward(e, true)
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	want, _ := a.Forward(e, true)
	b := mustEmbNoise(t, 0.7, 2, 4, 0)
	if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Forward(e, true)
	for i := range want.Data {
		if got.Data[i] != want.Data[i] {
			t.Fatalf("resumed noise differs at %d", i)
		}
	}
	if err := b.Load(bytes.NewReader([]byte("mid/v1"))); err == nil {
		t.Errorf("loading another layer's state succeeded")
	}
}

// TestEmbNoiseAccountant compares ε with the continuous optimum of the
// RDP conversion, computed in closed form: minimising aα + b/(α − 1), a =
// 2k/σ², b = log(1/δ), over α > 1 gives a + 2√(ab); the order grid may
// only do slightly worse.
func TestEmbNoiseAccountant(t *testing.T) {
	for _, c := range []struct {
		sigma, delta float64
		k            int64
	}{{1, 1e-5, 1}, {4, 1e-5, 10}, {10, 1e-6, 100}, {0.8, 1e-3, 3}} {
		p := Params{"emb_noise_sigma": c.sigma, "emb_noise_delta": c.delta}
		m, err := Account("none", p, c.k)
		if err != nil {
			t.Fatal(err)
		}
		a, b := 2*float64(c.k)/(c.sigma*c.sigma), math.Log(1/c.delta)
		best := a + 2*math.Sqrt(a*b)
		if eps := m["emb_noise_eps"]; eps < best-1e-9 || eps > best*1.01 {
			t.Errorf("σ %v δ %v k %d: ε %v, closed-form optimum %v", c.sigma, c.delta, c.k, eps, best)
		}
		if m["emb_noise_delta"] != c.delta || m["emb_noise_releases"] != float64(c.k) {
			t.Errorf("accountant record %v", m)
		}
	}
	if _, err := NewEmbNoise(0, 1, 1, 0); err == nil {
		t.Errorf("σ = 0 accepted")
	}
	if _, err := NewEmbNoise(1, math.Inf(1), 1, 0); err == nil {
		t.Errorf("C = ∞ accepted")
	}
}
