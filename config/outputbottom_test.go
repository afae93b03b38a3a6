package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// bottomStep runs one training step of b on batch with gradient g at the
// cut (scaled by the row index, so that rows differ) and returns the
// gradient at the first layer's output.
func bottomStep(t *testing.T, b model.Bottom, in *data.Batch) []float32 {
	t.Helper()
	b.(interface{ SetTraining(bool) }).SetTraining(true)
	defer b.(interface{ SetTraining(bool) }).SetTraining(false)
	e, err := b.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	g := tensor.New(e.Rows, e.Cols)
	for i := range g.Data {
		g.Data[i] = float32(i%7-3) / 10
	}
	grads, err := b.Backward(g)
	if err != nil {
		t.Fatal(err)
	}
	if grads[len(grads)-1] != g {
		t.Error("the last gradient is not the one received at the cut")
	}
	if outs := b.Outputs(); outs[len(outs)-1] != e {
		t.Error("the last output is not the embedding sent")
	}
	aud, err := b.Backprop(g)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(aud[0].Data, grads[0].Data) {
		t.Error("Backprop's gradients differ from Backward's")
	}
	out := slices.Clone(grads[0].Data)
	if err := b.Step(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBottomWithPassiveOutputResumes builds a bottom behind each
// passive-side defence, checks that the embedding sent is the layer's
// output, that a saved state loaded into a freshly built bottom continues
// bit-identically, and that a checkpoint without the layer (or of another
// layer) is refused with the layer named.
func TestBottomWithPassiveOutputResumes(t *testing.T) {
	def := Default()
	split, err := data.Generate(64, 0.3, 1, def.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	var in data.Batch
	split.Train.X.Gather([]int{0, 1, 2, 3, 4, 5, 6, 7}, &in)
	for _, p := range []protect.Params{{"mid_passive_lambda": 0.1}, {"fedpass_passive_range": 4}, {"nopeek_alpha": 1}} {
		c := Default()
		c.Model, c.Layers, c.Cut, c.Params, c.LR = "mlp", []int{8, 6, 4}, 2, p, 1e-3
		build := func(c Config) model.Bottom {
			b, err := c.BuildBottom(split.Train.X)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		a := build(c)
		ob, ok := a.(*OutputBottom)
		if !ok {
			t.Fatalf("%v: a %T, want an OutputBottom", p, a)
		}
		if a.CutDim() != 6 {
			t.Errorf("cut width %d, want 6", a.CutDim())
		}
		bottomStep(t, a, &in)
		var buf bytes.Buffer
		if err := a.Save(&buf); err != nil {
			t.Fatal(err)
		}
		saved := bytes.Clone(buf.Bytes())
		want := bottomStep(t, a, &in)
		b := build(c)
		if err := b.Load(bytes.NewReader(saved)); err != nil {
			t.Fatal(err)
		}
		if got := bottomStep(t, b, &in); !slices.Equal(got, want) {
			t.Errorf("%v: the loaded bottom's step differs", p)
		}
		// Evaluation (the default mode) is deterministic and is the
		// layer's output of the bottom's cut embedding.
		e1, _ := b.Forward(&in)
		e1 = e1.Clone()
		e2, _ := b.Forward(&in)
		inner, _ := b.(*OutputBottom).Bottom.Forward(&in)
		e3, _ := b.(*OutputBottom).Out.Forward(inner, false)
		if !slices.Equal(e1.Data, e2.Data) || !slices.Equal(e1.Data, e3.Data) {
			t.Errorf("%v: evaluation is not the output layer of the cut embedding", p)
		}
		plain := c
		plain.Params = nil
		var pb bytes.Buffer
		if err := build(plain).Save(&pb); err != nil {
			t.Fatal(err)
		}
		if err := build(c).Load(&pb); err == nil || !strings.Contains(err.Error(), ob.Out.Name()) {
			t.Errorf("%v: a checkpoint without the layer: %v", p, err)
		}
		if err := build(plain).Load(bytes.NewReader(saved)); err == nil {
			t.Errorf("%v: a checkpoint with the layer loaded into a plain bottom", p)
		}
	}
	mid, fp := Default(), Default()
	mid.Model, mid.Layers, mid.Cut, mid.Params, mid.LR = "mlp", []int{8, 6}, 1, protect.Params{"mid_passive_lambda": 0.1}, 1e-3
	fp.Model, fp.Layers, fp.Cut, fp.Params, fp.LR = "mlp", []int{8, 6}, 1, protect.Params{"fedpass_passive_range": 4}, 1e-3
	var buf bytes.Buffer
	b, err := mid.BuildBottom(split.Train.X)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if b, err = fp.BuildBottom(split.Train.X); err != nil || b.Load(&buf) == nil {
		t.Error("a MID bottom's checkpoint loaded into a FedPass bottom")
	}
}

// FuzzOutputBottomLoad feeds arbitrary bytes to the Load of a bottom
// behind a passive-side layer (bottom.model and the passive's checkpoint
// are outside input): it must fail cleanly or restore a state whose saved
// bytes load into a fresh bottom and save again unchanged (the bottom's own
// format is not canonical for every input it accepts, so the first save
// may differ from the input).
func FuzzOutputBottomLoad(f *testing.F) {
	def := Default()
	split, err := data.Generate(16, 0.3, 1, def.DataOptions())
	if err != nil {
		f.Fatal(err)
	}
	c := Default()
	c.Model, c.Layers, c.Cut, c.EmbedDim, c.HashBuckets, c.LR = "mlp", []int{3, 2}, 1, 1, 4, 1e-3
	build := func(p protect.Params) model.Bottom {
		c := c
		c.Params = p
		b, err := c.BuildBottom(split.Train.X)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	kinds := []protect.Params{{"fedpass_passive_range": 1}, {"mid_passive_lambda": 1}}
	for _, p := range kinds {
		var b bytes.Buffer
		if err := build(p).Save(&b); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, p := range kinds {
			b := build(p)
			if err := b.Load(bytes.NewReader(raw)); err != nil {
				continue
			}
			var once, twice bytes.Buffer
			if err := b.Save(&once); err != nil {
				t.Fatal(err)
			}
			again := build(p)
			if err := again.Load(bytes.NewReader(once.Bytes())); err != nil {
				t.Fatalf("%v: a saved state does not load: %v", p, err)
			}
			if err := again.Save(&twice); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(once.Bytes(), twice.Bytes()) {
				t.Fatalf("%v: a state of %d bytes saves back as %d different bytes", p, once.Len(), twice.Len())
			}
		}
	})
}

// TestNoPeekReadsTheBatchFeatures: behind the bottom, NoPeek is handed the
// batch's raw features at every training forward: its loss is positive
// (zero without features), it sends the bottom's embedding unchanged, and
// the gradient the bottom backpropagates differs from the one received.
func TestNoPeekReadsTheBatchFeatures(t *testing.T) {
	def := Default()
	split, err := data.Generate(64, 0.3, 1, def.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	var in data.Batch
	split.Train.X.Gather([]int{0, 1, 2, 3, 4, 5, 6, 7}, &in)
	c := Default()
	c.Model, c.Layers, c.Cut, c.Params, c.LR = "mlp", []int{8, 6}, 1, protect.Params{"nopeek_alpha": 1}, 1e-3
	b, err := c.BuildBottom(split.Train.X)
	if err != nil {
		t.Fatal(err)
	}
	ob := b.(*OutputBottom)
	np := ob.Out.(*protect.NoPeek)
	ob.SetTraining(true)
	e, err := b.Forward(&in)
	if err != nil {
		t.Fatal(err)
	}
	inner, _ := ob.Bottom.Forward(&in)
	if !slices.Equal(e.Data, inner.Data) {
		t.Error("NoPeek changed the embedding sent")
	}
	if _, err := b.Forward(&in); err != nil { // the inner forward above replaced the bottom's state
		t.Fatal(err)
	}
	if np.RegLoss() <= 0 {
		t.Fatalf("NoPeek's loss %g: the batch's features did not reach it", np.RegLoss())
	}
	g := tensor.New(e.Rows, e.Cols)
	through, err := ob.Out.Backprop(g)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(through.Data, g.Data) {
		t.Error("NoPeek added no gradient to the one received")
	}
}
