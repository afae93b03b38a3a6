package model

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/nn/gradcheck"
	"github.com/splitguard/splitguard/tensor"
)

// tinyCNN is 12×12×2 images, 3 blocks of 4 filters (12→6→3→1), the cut
// after block 2 (3×3×4 = 36), a Dense layer of 5.
func tinyCNN() CNNConfig {
	return CNNConfig{Height: 12, Width: 12, Channels: 2, Blocks: 3, Filters: 4, Kernel: 3, Dense: 5, Cut: 2, LR: 1e-2, Seed: 3}
}

func imageBatch(r *rand.Rand, c CNNConfig, rows int) *data.Batch {
	b := &data.Batch{Rows: rows, Dense: tensor.New(rows, c.Height*c.Width*c.Channels)}
	for i := range b.Dense.Data {
		b.Dense.Data[i] = r.Float32()
	}
	return b
}

func TestCNNConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     CNNConfig
		cutDim  int
		wantErr string
	}{
		{"default ISIC", CNNConfig{}, 1600, ""},
		{"cut after 6", CNNConfig{Cut: 6}, 64, ""},
		{"cut after 1", CNNConfig{Cut: 1}, 42 * 42 * 64, ""},
		{"fashion 28x28x1, 4 blocks", CNNConfig{Height: 28, Width: 28, Channels: 1, Blocks: 4, Cut: 2, Filters: 8}, 7 * 7 * 8, ""},
		{"odd sizes floor", CNNConfig{Height: 13, Width: 9, Channels: 1, Blocks: 2, Cut: 2, Filters: 2}, 3 * 2 * 2, ""},
		{"too many blocks", CNNConfig{Blocks: 7}, 0, "at most 6 blocks"},
		{"cut beyond blocks", CNNConfig{Blocks: 3, Cut: 4}, 0, "cut 4 outside [1, 3]"},
		{"negative filters", CNNConfig{Filters: -1}, 0, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.cfg.resolve()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CutDim(); got != tc.cutDim {
				t.Fatalf("CutDim = %d, want %d", got, tc.cutDim)
			}
		})
	}
}

// TestCNNSplitGradients checks by central differences, for the whole
// split CNN with the loss L = Σ_i p_i·logit_i: the cut gradient returned
// by the top, the gradient at block 1's output returned by the bottom's
// Backward and Backprop, and the parameter gradients of every layer on
// both sides.
func TestCNNSplitGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 1))
	cfg := tinyCNN()
	bot, top, err := NewCNN(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Small positive biases keep pre-activations off the ReLU kink at 0.
	for _, ps := range [][]*nn.Param{bot.params, top.params} {
		for _, p := range ps {
			if strings.HasSuffix(p.Name, ".b") {
				for i := range p.W.Data {
					p.W.Data[i] = float32(0.05 + 0.1*r.Float64())
				}
			}
		}
	}
	const B = 3
	in := imageBatch(r, cfg, B)
	p := make([]float32, B)
	for i := range p {
		p[i] = float32(r.NormFloat64())
	}
	proj := func(logits []float32) float64 {
		var s float64
		for i, l := range logits {
			s += float64(p[i]) * float64(l)
		}
		return s
	}
	loss := func() float64 {
		e := must(bot.Forward(in))
		return proj(must(top.Forward(e, nil)))
	}
	e := must(bot.Forward(in))
	must(top.Forward(e, nil))
	gCut := must(top.Backward(p)).Clone()
	grads := must(bot.Backward(gCut))
	g1 := grads[0].Clone()
	if grads[1] != gCut && !slices.Equal(grads[1].Data, gCut.Data) {
		t.Fatal("the last activation gradient is not the cut gradient")
	}
	aud := must(bot.Backprop(gCut))
	if !slices.Equal(aud[0].Data, g1.Data) {
		t.Fatal("Backprop's block-1 gradient differs from Backward's")
	}
	var paramGrads [][]float32
	for _, ps := range [][]*nn.Param{bot.params, top.params} {
		for _, q := range ps {
			paramGrads = append(paramGrads, append([]float32(nil), q.G.Data...))
		}
	}

	const h = 1e-3
	tol := gradcheck.Tol{Rel: 3e-2, Floor: 3e-2}
	// ∂L/∂e: perturb the cut embedding and rerun the top.
	eFixed := must(bot.Forward(in)).Clone()
	topLoss := func() float64 { return proj(must(top.Forward(eFixed, nil))) }
	if err := checkKinked("cut gradient", topLoss, eFixed.Data, gCut.Data, gradcheck.Sample(r, len(eFixed.Data), 40), h, tol); err != nil {
		t.Fatal(err)
	}
	// ∂L/∂(block 1 output): perturb it and rerun block 2 and the top.
	must(bot.Forward(in))
	h1 := bot.outs[0].Clone()
	fromBlock1 := func() float64 { return proj(must(top.Forward(bot.blocks[1].forward(h1), nil))) }
	if err := checkKinked("block-1 gradient", fromBlock1, h1.Data, g1.Data, gradcheck.Sample(r, len(h1.Data), 40), h, tol); err != nil {
		t.Fatal(err)
	}
	// Parameters of every layer, through the whole split model.
	k := 0
	for _, ps := range [][]*nn.Param{bot.params, top.params} {
		for _, q := range ps {
			if err := checkKinked(q.Name, loss, q.W.Data, paramGrads[k], gradcheck.Sample(r, len(q.W.Data), 25), h, tol); err != nil {
				t.Fatalf("parameter %d: %v", k, err)
			}
			k++
		}
	}
}

// checkKinked is gradcheck.Check for a piecewise-smooth loss. Max-pooling
// makes the loss of a whole CNN kinked wherever two values of a window
// swap order, and random weights put such a near-tie within a step of a
// few components. At a kink the true (sub)gradient a layer returns is one
// of the one-sided derivatives, so a component passes when the analytic
// value matches the central difference or either one-sided difference
// (f(x+h)−f(x))/h, (f(x)−f(x−h))/h within tol; a wrong gradient matches
// none of them.
func checkKinked(name string, f func() float64, x, analytic []float32, idx []int, h float64, tol gradcheck.Tol) error {
	central, left, right := gradcheck.Differences(f, x, idx, h)
	var scale float64
	for _, c := range central {
		scale = math.Max(scale, math.Abs(c))
	}
	for k, i := range idx {
		a := float64(analytic[i])
		ok := false
		for _, n := range []float64{central[k], left[k], right[k]} {
			if math.Abs(a-n) <= tol.Rel*(math.Abs(n)+tol.Floor*scale) {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("%s[%d]: analytic %.6g; central %.6g, left %.6g, right %.6g (largest central %.3g)", name, i, a, central[k], left[k], right[k], scale)
		}
	}
	return nil
}

func TestCNNOutputsShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 1))
	cfg := DefaultCNNConfig()
	cfg.Filters = 8 // the layout of the ISIC model at a fraction of the cost
	bot, top, err := NewCNN(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := must(bot.Forward(imageBatch(r, bot.Config(), 2)))
	wantSides := []int{42, 21, 10, 5}
	outs := bot.Outputs()
	if len(outs) != 4 || outs[3] != e {
		t.Fatalf("%d outputs, the last being the cut: %v", len(outs), outs[len(outs)-1] == e)
	}
	for i, s := range bot.LayerShapes() {
		if s.Height != wantSides[i] || s.Width != wantSides[i] || s.Channels != 8 || outs[i].Cols != s.Height*s.Width*8 || outs[i].Rows != 2 {
			t.Fatalf("block %d: shape %+v, output %d×%d", i+1, s, outs[i].Rows, outs[i].Cols)
		}
	}
	if e.Cols != 5*5*8 || bot.CutDim() != 200 || top.CutDim() != 200 {
		t.Fatalf("cut %d, CutDim %d/%d, want 200", e.Cols, bot.CutDim(), top.CutDim())
	}
	logits := must(top.Forward(e, nil))
	if len(logits) != 2 {
		t.Fatalf("%d logits for 2 rows", len(logits))
	}
}

func TestCNNInputErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	cfg := tinyCNN()
	bot, top := must2(NewCNN(cfg))
	nan := imageBatch(r, cfg, 2)
	nan.Dense.Data[5] = float32(math.NaN())
	wrong := &data.Batch{Rows: 2, Dense: tensor.New(2, 12*12*3)}
	withCat := imageBatch(r, cfg, 2)
	withCat.Cat = []int32{0, 1}
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"nil batch", func() error { _, err := bot.Forward(nil); return err }, "nil batch"},
		{"wrong width", func() error { _, err := bot.Forward(wrong); return err }, "image block is 2×432, want 2×288 (12×12×2 images)"},
		{"categorical ids", func() error { _, err := bot.Forward(withCat); return err }, "categorical"},
		{"NaN pixel", func() error { _, err := bot.Forward(nan); return err }, "non-finite"},
		{"backward before forward", func() error { _, err := bot.Backward(tensor.New(2, 36)); return err }, "before any Forward"},
		{"step before backward", func() error { return bot.Step() }, "without a Backward"},
		{"top wide features", func() error { _, err := top.Forward(tensor.New(2, 36), imageBatch(r, cfg, 2)); return err }, "no wide part"},
		{"top wrong cut width", func() error { _, err := top.Forward(tensor.New(2, 35), nil); return err }, "2×35, want B×36"},
		{"top step before backward", func() error { return top.Step() }, "without a Backward"},
	} {
		if err := tc.run(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	must(bot.Forward(imageBatch(r, cfg, 2)))
	if _, err := bot.Backward(tensor.New(3, 36)); err == nil || !strings.Contains(err.Error(), "3×36, want 2×36") {
		t.Errorf("cut gradient of the wrong shape: %v", err)
	}
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

// cnnSteps trains n steps on the given batches and returns the losses.
func cnnSteps(t *testing.T, bot *CNNBottom, top *CNNTop, ins []*data.Batch, ys [][]float32, n int) []float64 {
	t.Helper()
	var losses []float64
	for s := range n {
		in, y := ins[s%len(ins)], ys[s%len(ys)]
		d := make([]float32, in.Rows)
		e, err := bot.Forward(in)
		if err != nil {
			t.Fatal(err)
		}
		l, err := nn.SigmoidBCE(must(top.Forward(e, nil)), y, d)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
		g := must(top.Backward(d))
		must(bot.Backward(g))
		if err := top.Step(); err != nil {
			t.Fatal(err)
		}
		if err := bot.Step(); err != nil {
			t.Fatal(err)
		}
	}
	return losses
}

// lesionData makes a learnable task: positives carry a bright 4×4 square
// at a random place, negatives do not.
func lesionData(r *rand.Rand, c CNNConfig, nBatches, rows int) ([]*data.Batch, [][]float32) {
	var ins []*data.Batch
	var ys [][]float32
	for range nBatches {
		b := imageBatch(r, c, rows)
		y := make([]float32, rows)
		for i := range rows {
			for k := range b.Dense.Row(i) {
				b.Dense.Row(i)[k] *= 0.5
			}
			if i%2 == 0 {
				y[i] = 1
				r0, c0 := r.IntN(c.Height-4), r.IntN(c.Width-4)
				for dr := range 4 {
					for dc := range 4 {
						for ch := range c.Channels {
							b.Dense.Row(i)[((r0+dr)*c.Width+c0+dc)*c.Channels+ch] = 1
						}
					}
				}
			}
		}
		ins, ys = append(ins, b), append(ys, y)
	}
	return ins, ys
}

func TestCNNLearnsAndIsDeterministic(t *testing.T) {
	cfg := tinyCNN()
	ins, ys := lesionData(rand.New(rand.NewPCG(24, 1)), cfg, 4, 16)
	run := func(seed uint64) []float64 {
		c := cfg
		c.Seed = seed
		bot, top := must2(NewCNN(c))
		return cnnSteps(t, bot, top, ins, ys, 60)
	}
	a, b, other := run(3), run(3), run(4)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("step %d: loss %v and %v with the same seed", i, a[i], b[i])
		}
	}
	if a[0] == other[0] {
		t.Fatal("different seeds gave the same first loss")
	}
	first := (a[0] + a[1] + a[2] + a[3]) / 4
	last := (a[56] + a[57] + a[58] + a[59]) / 4
	if !(last < 0.5*first) {
		t.Fatalf("mean loss over the first 4 steps %.4f, last 4 steps %.4f: not learning", first, last)
	}
}

func TestCNNCheckpointResumesBitIdentically(t *testing.T) {
	cfg := tinyCNN()
	ins, ys := lesionData(rand.New(rand.NewPCG(25, 1)), cfg, 3, 8)
	bot, top := must2(NewCNN(cfg))
	cnnSteps(t, bot, top, ins, ys, 3)
	var bb, tb bytes.Buffer
	if err := bot.Save(&bb); err != nil {
		t.Fatal(err)
	}
	if err := top.Save(&tb); err != nil {
		t.Fatal(err)
	}
	c2 := cfg
	c2.Seed = 99 // different initial weights, all overwritten by Load
	bot2, top2 := must2(NewCNN(c2))
	if err := bot2.Load(bytes.NewReader(bb.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := top2.Load(bytes.NewReader(tb.Bytes())); err != nil {
		t.Fatal(err)
	}
	want := cnnSteps(t, bot, top, ins, ys, 4)
	got := cnnSteps(t, bot2, top2, ins, ys, 4)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("step %d after Load: loss %v, uninterrupted %v", i, got[i], want[i])
		}
	}
	// A checkpoint does not load into another shape or the other side.
	c3 := cfg
	c3.Filters = 5
	bot3, _ := must2(NewCNN(c3))
	if err := bot3.Load(bytes.NewReader(bb.Bytes())); err == nil || !strings.Contains(err.Error(), "different config") {
		t.Fatalf("loading into 5 filters: %v", err)
	}
	if err := top2.Load(bytes.NewReader(bb.Bytes())); err == nil || !strings.Contains(err.Error(), "cnn_bottom") {
		t.Fatalf("loading a bottom checkpoint into a top: %v", err)
	}
}
