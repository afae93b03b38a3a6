package integrity

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// lowRankBatch is a batch of rows = latent(2) · basis + 0.05 noise, the
// first k rows shifted by shift (added to every column).
func lowRankBatch(rng *rand.Rand, basis [][]float64, rows, k int, shift float64) *tensor.Matrix {
	d := len(basis[0])
	e := tensor.New(rows, d)
	for r := range rows {
		u, v := rng.NormFloat64(), rng.NormFloat64()
		for c := range d {
			x := u*basis[0][c] + v*basis[1][c] + 0.05*rng.NormFloat64()
			if r < k {
				x += shift * float64(1-2*(c/2%2)) // the stripe +, +, −, −, …
			}
			e.Data[r*d+c] = float32(x)
		}
	}
	return e
}

// TestAutoencoderScoresShiftedRows: on a stream of 8-column rows that
// lie near a plane, the autoencoder scores 0 during its ten-batch
// warm-up and at most 0.05 on honest batches after 60 batches of
// training; a batch whose first 10 of 100 rows carry a stripe of 3
// (off the plane) scores at least 0.08 (those rows) and at most 0.15.
func TestAutoencoderScoresShiftedRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	basis := [][]float64{{1, 0.5, 0, -1, 0.3, 0, 0.8, 0.2}, {0, 1, 1, 0.2, -0.5, 0.7, 0, -0.4}}
	a := &autoencoder{}
	for step := range 80 {
		s := a.Observe(int64(step), lowRankBatch(rng, basis, 100, 0, 0))
		if step < aeWarmup && s != 0 {
			t.Fatalf("warm-up batch %d scored %g", step, s)
		}
		if step >= 60 && s > 0.05 {
			t.Errorf("honest batch %d scored %g", step, s)
		}
	}
	if s := a.Observe(80, lowRankBatch(rng, basis, 100, 10, 3)); s < 0.08 || s > 0.15 {
		t.Errorf("a batch with 10 shifted rows of 100 scored %g, want in [0.08, 0.15]", s)
	}
	// The shifted rows were not learnt from: the next honest batch is
	// scored as before.
	if s := a.Observe(81, lowRankBatch(rng, basis, 100, 0, 0)); s > 0.05 {
		t.Errorf("the honest batch after scored %g", s)
	}
}

// TestAutoencoderGradient: the gradient the autoencoder learns from is
// that of the mean over the rows of their mean squared reconstruction
// error, checked by central differences on every encoder weight.
func TestAutoencoderGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := &autoencoder{}
	a.reset(6)
	a.z.Resize(7, 6)
	for i := range a.z.Data {
		a.z.Data[i] = float32(rng.NormFloat64())
	}
	for i := range a.enc.B.Data {
		a.enc.B.Data[i] = 0.1 // off the ReLU kink
	}
	loss := func() float64 {
		a.reconstruct()
		s := 0.0
		for _, e := range a.err[:a.z.Rows] {
			s += e
		}
		return s / float64(a.z.Rows)
	}
	loss()
	a.enc.Backward(a.relu.Backward(a.dec.Backward(&a.dy)))
	g := append([]float32(nil), a.enc.Params()[0].G.Data...)
	w := a.enc.W.Data
	const h = 1e-2
	for i := range w {
		old := w[i]
		w[i] = old + h
		up := loss()
		w[i] = old - h
		down := loss()
		w[i] = old
		num := (up - down) / (2 * h)
		if math.Abs(num-float64(g[i])) > 2e-3*math.Max(1, math.Abs(num)) {
			t.Errorf("encoder weight %d: gradient %g, central difference %g", i, g[i], num)
		}
	}
}

// TestAutoencoderPeakScoresOneRow: on the same stream, autoencoder_peak
// scores a batch with a single off-plane row above every honest batch
// after training, and that one row leaves the share score below 0.02.
func TestAutoencoderPeakScoresOneRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	basis := [][]float64{{1, 0.5, 0, -1, 0.3, 0, 0.8, 0.2}, {0, 1, 1, 0.2, -0.5, 0.7, 0, -0.4}}
	pd, err := NewDetector("autoencoder_peak")
	if err != nil {
		t.Fatal(err)
	}
	sd, err := NewDetector("autoencoder")
	if err != nil {
		t.Fatal(err)
	}
	peak, share := pd.(*autoencoder), sd.(*autoencoder)
	if !peak.peak || share.peak || peak.Name() != "autoencoder_peak" || share.Name() != "autoencoder" {
		t.Fatalf("names %q, %q", peak.Name(), share.Name())
	}
	honest := 0.0
	for step := range 80 {
		e := lowRankBatch(rng, basis, 100, 0, 0)
		s := peak.Observe(int64(step), e)
		share.Observe(int64(step), e)
		if step >= 60 {
			honest = max(honest, s)
		}
	}
	e := lowRankBatch(rng, basis, 100, 1, 3)
	if s := peak.Observe(80, e); s <= honest {
		t.Errorf("one shifted row: peak score %g, honest batches up to %g", s, honest)
	}
	if s := share.Observe(80, e); s > 0.02 {
		t.Errorf("one shifted row: share score %g, want ≤ 0.02", s)
	}
}
