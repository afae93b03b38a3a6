package protect

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// TestCAEDecoderInvertsEncoder checks the defining property on one-hot
// labels: D(E(y)) recovers y, while the fake labels E(y) are soft, and
// more so as λ grows.
func TestCAEDecoderInvertsEncoder(t *testing.T) {
	gap := math.Inf(1)
	for _, lambda := range []float64{0, 2, 5} {
		c, err := BuildCodec(Params{"cae_lambda": lambda}, 1)
		if err != nil {
			t.Fatal(err)
		}
		e0, e1 := float64(c.Encode(0)), float64(c.Encode(1))
		for y, e := range []float64{e0, e1} {
			if d := c.Decode(e); math.Abs(d-float64(y)) > 0.1 {
				t.Errorf("λ=%v: D(E(%d)) = %v, want within 0.1 of %d", lambda, y, d, y)
			}
		}
		if !(e0 > 0.2 && e1 < 0.98 && e0 < e1) {
			t.Errorf("λ=%v: fake labels %v, %v are not soft", lambda, e0, e1)
		}
		if e1-e0 >= gap {
			t.Errorf("λ=%v: fake labels %v apart, not closer than %v at a smaller λ", lambda, e1-e0, gap)
		}
		gap = e1 - e0
	}
	if _, err := NewCAE(-1, 1); err == nil {
		t.Error("negative λ accepted")
	}
	if err := Check("none", Params{"cae_lambda": 1}); err != nil {
		t.Error(err)
	}
}

// caeLoss is the autoencoder's mean loss on a batch, computed here in
// float64 from the layers' outputs: 10·CE(D(E(y)), y) − λ·H(E(y)) − CE(E(y), y).
func caeLoss(c *CAE, batch [][2]float64) float64 {
	fake := c.apply(&c.enc, batch)
	rec := c.apply(&c.dec, fake)
	var l float64
	for i, y := range batch {
		for k := range 2 {
			l += -caeDecodeW * y[k] * math.Log(rec[i][k])
			l += c.Lambda * fake[i][k] * math.Log(fake[i][k])
			l += y[k] * math.Log(fake[i][k])
		}
	}
	return l / float64(len(batch))
}

func TestCAEGradients(t *testing.T) {
	c, _ := NewCAE(1.5, 3)
	batch := [][2]float64{{0.9, 0.1}, {0.2, 0.8}, {0.5, 0.5}, {0.99, 0.01}}
	c.step(batch)
	for _, l := range append(c.enc[:], c.dec[:]...) {
		for _, p := range l.Params() {
			g := p.G.Clone()
			if err := gradcheck.Check(p.Name, func() float64 { return caeLoss(c, batch) }, p.W.Data, g.Data, nil, 1e-3, gradcheck.Default); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestDSGDIsUnbiasedOnNLevels(t *testing.T) {
	for _, c := range []struct {
		g        []float32
		bins     int
		clipped  float64
		expected []float64 // E[g̃]: g clipped to μ ± 2s, by hand
	}{
		// μ = 1.5, s = √1.25: nothing clipped.
		{[]float32{0, 1, 2, 3}, 3, 0, []float64{0, 1, 2, 3}},
		// μ = 1, s = 3: the range is [−5, 7] and 10 is clipped to 7.
		{[]float32{0, 0, 0, 0, 0, 0, 0, 0, 0, 10}, 5, 0.1, []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 7}},
	} {
		g := tensor.New(1, len(c.g))
		copy(g.Data, c.g)
		p, err := New("dsgd", Params{"dsgd_bins": float64(c.bins)})
		if err != nil {
			t.Fatal(err)
		}
		rng := newRNG(5)
		out := &tensor.Matrix{}
		mean := make([]float64, len(c.g))
		levels := map[float32]bool{}
		const draws = 20000
		for range draws {
			st, err := p.Protect(&Batch{Grad: g}, out, rng)
			if err != nil {
				t.Fatal(err)
			}
			if st["clipped"] != c.clipped {
				t.Fatalf("clipped %v, want %v", st["clipped"], c.clipped)
			}
			for k, v := range out.Data {
				mean[k] += float64(v) / draws
				levels[v] = true
			}
		}
		if len(levels) > c.bins {
			t.Errorf("%d distinct values, want at most %d", len(levels), c.bins)
		}
		for k := range mean {
			if math.Abs(mean[k]-c.expected[k]) > 0.05 {
				t.Errorf("%v: E[g̃_%d] = %v, want %v", c.g, k, mean[k], c.expected[k])
			}
		}
	}
}
