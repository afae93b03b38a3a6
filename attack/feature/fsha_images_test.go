package feature

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// tinyImages returns n side×side grey images, each the sum of two of
// eight fixed blobs at random strengths, clipped to [0, 1].
func tinyImages(n, side int, rng *rand.Rand) *data.Features {
	m := side * side
	blobs := make([][]float64, 8)
	for k := range blobs {
		cx, cy := rng.Float64()*float64(side), rng.Float64()*float64(side)
		blobs[k] = make([]float64, m)
		for p := range m {
			dx, dy := float64(p%side)-cx, float64(p/side)-cy
			blobs[k][p] = math.Exp(-(dx*dx + dy*dy) / 4)
		}
	}
	x := &data.Features{Rows: n, NumDense: m, Dense: make([]float32, n*m), Image: &data.ImageShape{Height: side, Width: side, Channels: 1}}
	for r := range n {
		a, b := rng.IntN(8), rng.IntN(8)
		sa, sb := rng.Float64(), rng.Float64()
		for p := range m {
			x.Dense[r*m+p] = float32(min(1, sa*blobs[a][p]+sb*blobs[b][p]))
		}
	}
	return x
}

// denseBottom is a passive party's bottom relu(x·W + b) trained by Adam
// on the gradients it receives.
type denseBottom struct {
	l    *nn.Dense
	relu nn.ReLU
	opt  *nn.Adam
}

func (b *denseBottom) forward(x *tensor.Matrix) *tensor.Matrix {
	return b.relu.Forward(b.l.Forward(x))
}

func (b *denseBottom) train(g *tensor.Matrix) {
	b.l.Backward(b.relu.Backward(g))
	b.opt.Step(b.l.Params())
}

// TestFSHAImagesHijacksTheBottom: a bottom trained only on FSHA's answers
// moves its output distribution onto the pilot's: the distance between
// them (wassersteinGap, the 2-Wasserstein distance of diagonal Gaussians
// fitted to each, computed apart from the critic) falls to a tenth.
// Matching the distribution does not make the bottom the pilot: the
// held-out reconstructions are logged, not asserted (docs/methods/
// features.md §10 has the figures).
func TestFSHAImagesHijacksTheBottom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const side, d, batch = 8, 16, 32
	all := tinyImages(1400, side, rng)
	pub := rowsOf(all, 0, 400)
	priv := tensor.FromSlice(1000, side*side, slices.Clone(all.Dense[400*side*side:]))
	f, err := NewFSHA(pub, d, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Hidden = 64
	bot := &denseBottom{l: nn.NewDense(side*side, d, nn.HeNormal, rng), opt: nn.NewAdam(1e-3)}
	for i := range bot.l.W.Data {
		bot.l.W.Data[i] *= 4 // start far from the pilot's codes
	}
	held := headRows(priv, 200)
	gap := func() float64 {
		e := bot.forward(held).Clone()
		c, err := f.PilotCodes(200)
		if err != nil {
			t.Fatal(err)
		}
		return wassersteinGap(e, c)
	}
	xb := tensor.New(batch, side*side)
	var first float64
	for step := range 3000 {
		for i := range batch {
			copy(xb.Row(i), priv.Row(200+rng.IntN(800)))
		}
		g, err := f.Gradient(bot.forward(xb))
		if err != nil {
			t.Fatal(err)
		}
		bot.train(g)
		if step == 0 {
			first = gap()
		}
		if testing.Verbose() && step%250 == 0 {
			rec, _ := f.Images(bot.forward(held))
			mse, r2 := ImageScores(held, rec)
			w, p := f.Critic()
			t.Logf("step %d: gap %.4g, held-out MSE %.4g R² %.3f, critic %.3g penalty %.3g", step, gap(), mse, r2, w, p)
		}
	}
	last := gap()
	rec, err := f.Images(bot.forward(held))
	if err != nil {
		t.Fatal(err)
	}
	mse, r2 := ImageScores(held, rec)
	t.Logf("gap %.4g → %.4g; held-out MSE %.4g, R² %.3f", first, last, mse, r2)
	if !(last < 0.1*first) {
		t.Errorf("distance to the pilot's codes %g after 3000 steps, %g after the first", last, first)
	}
}

// TestImageScores on hand-computed cases: truth rows (0, 1) and (1, 1);
// pixel 0 varies (SST 0.5), pixel 1 does not.
func TestImageScores(t *testing.T) {
	truth := tensor.FromSlice(2, 2, []float32{0, 1, 1, 1})
	for _, tc := range []struct {
		guess   []float32
		mse, r2 float64
	}{
		{[]float32{0, 1, 1, 1}, 0, 1},
		{[]float32{0.5, 1, 0.5, 1}, 0.125, 0}, // the mean image
		{[]float32{0, 1, 1, 0}, 0.25, -1},     // SSE 1 against SST 0.5
	} {
		mse, r2 := ImageScores(truth, tensor.FromSlice(2, 2, tc.guess))
		if math.Abs(mse-tc.mse) > 1e-12 || math.Abs(r2-tc.r2) > 1e-12 {
			t.Errorf("guess %v: MSE %g, R² %g; want %g, %g", tc.guess, mse, r2, tc.mse, tc.r2)
		}
	}
}
