package config

import (
	"bytes"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// plainStep takes one training step of b on in with a fixed cut gradient.
func plainStep(t *testing.T, b model.Bottom, in *data.Batch) {
	t.Helper()
	e, err := b.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	g := tensor.New(e.Rows, e.Cols)
	for i := range g.Data {
		g.Data[i] = float32(i%7-3) / 10
	}
	if _, err := b.Backward(g); err != nil {
		t.Fatal(err)
	}
	if err := b.Step(); err != nil {
		t.Fatal(err)
	}
}

// TestPassiveOptimizerResumes: a bottom trained by sgd or malicious_sgd,
// saved after three steps and loaded into a freshly built bottom, takes
// the next three steps exactly as the uninterrupted bottom does (its
// saved state after them is byte for byte the same). Without the
// optimiser's state (a fresh optimiser after the load) the steps differ —
// the momentum and the step growth restart — so the check can fail. A
// checkpoint of an honest (Adam) bottom does not load into one with a
// local optimiser, nor the reverse.
func TestPassiveOptimizerResumes(t *testing.T) {
	def := Default()
	split, err := data.Generate(64, 0.3, 1, def.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	var in data.Batch
	split.Train.X.Gather([]int{0, 1, 2, 3, 4, 5, 6, 7}, &in)
	build := func(c Config) model.Bottom {
		b, err := c.BuildBottom(split.Train.X)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	save := func(b model.Bottom) []byte {
		var buf bytes.Buffer
		if err := b.Save(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, opt := range []string{"sgd", "malicious_sgd"} {
		c := Default()
		c.Model, c.Layers, c.Cut, c.LR = "wdl", []int{8, 6, 4}, 2, 1e-3
		c.PassiveOptimizer, c.PassiveOptimizerLR = opt, 0.05
		a := build(c)
		for range 3 {
			plainStep(t, a, &in)
		}
		saved := save(a)
		for range 3 {
			plainStep(t, a, &in)
		}
		want := save(a)

		b := build(c)
		if err := b.Load(bytes.NewReader(saved)); err != nil {
			t.Fatalf("%s: %v", opt, err)
		}
		for range 3 {
			plainStep(t, b, &in)
		}
		if !bytes.Equal(save(b), want) {
			t.Errorf("%s: the resumed bottom's state after three steps differs from the uninterrupted one's", opt)
		}

		fresh := build(c)
		if err := fresh.Load(bytes.NewReader(saved)); err != nil {
			t.Fatal(err)
		}
		o, err := integrity.NewOptimizer(opt, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		fresh.(*model.DeepBottom).SetStepper(o)
		for range 3 {
			plainStep(t, fresh, &in)
		}
		if bytes.Equal(save(fresh)[:len(want)/2], want[:len(want)/2]) {
			t.Errorf("%s: a resume without the optimiser's state steps identically; the check cannot fail", opt)
		}

		honest := c
		honest.PassiveOptimizer, honest.PassiveOptimizerLR = "", 0
		if err := build(honest).Load(bytes.NewReader(saved)); err == nil {
			t.Errorf("%s: its checkpoint loaded into an honest bottom", opt)
		}
		if err := build(c).Load(bytes.NewReader(save(build(honest)))); err == nil {
			t.Errorf("%s: an honest bottom's checkpoint loaded into one with a local optimiser", opt)
		}
	}
}
