package config

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// trainStep runs one training step of top on e with targets y (mixed as
// the active party mixes them) and returns ∂L/∂e.
func trainStep(t *testing.T, top model.Top, e *tensor.Matrix, y []float32) []float32 {
	t.Helper()
	top.(interface{ SetTraining(bool) }).SetTraining(true)
	defer top.(interface{ SetTraining(bool) }).SetTraining(false)
	logits, err := top.Forward(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	y = top.(protect.TargetMixer).MixTargets(y)
	d := make([]float32, len(logits))
	for i, l := range logits {
		d[i] = (l - y[i]) / float32(len(logits)) // any fixed function of the logits will do
	}
	g, err := top.Backward(d)
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(g.Data)
	if err := top.Step(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTopWithDefenceLayersResumes checks that a top model behind MID,
// mixup or CAE, saved between two steps and loaded into a freshly built
// one, continues bit-identically — what a checkpoint and resume need —
// and that evaluation is deterministic.
func TestTopWithDefenceLayersResumes(t *testing.T) {
	for _, p := range []protect.Params{{"mid_lambda": 0.1}, {"mixup_alpha": 1}, {"cae_lambda": 1, "mid_lambda": 0.01}, {"fedpass_range": 5}} {
		c := Default()
		c.Model, c.Layers, c.Cut, c.Params, c.LR = "mlp", []int{8, 6, 4}, 1, p, 1e-3
		build := func() model.Top {
			top, _, err := c.BuildTop(nil)
			if err != nil {
				t.Fatal(err)
			}
			return top
		}
		rng := rand.New(rand.NewPCG(1, 2))
		e := tensor.New(16, 8)
		for i := range e.Data {
			e.Data[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, 16)
		for i := range y {
			y[i] = float32(i % 2)
		}
		a := build()
		trainStep(t, a, e, y)
		var buf bytes.Buffer
		if err := a.Save(&buf); err != nil {
			t.Fatal(err)
		}
		want := trainStep(t, a, e, y)
		b := build()
		if err := b.Load(&buf); err != nil {
			t.Fatal(err)
		}
		if got := trainStep(t, b, e, y); !slices.Equal(got, want) {
			t.Errorf("%v: the loaded top's step differs", p)
		}
		l1, _ := b.Forward(e, nil)
		l1 = slices.Clone(l1)
		l2, _ := b.Forward(e, nil)
		if !slices.Equal(l1, l2) {
			t.Errorf("%v: evaluation is not deterministic", p)
		}
	}
	c := Default()
	c.Model, c.Layers, c.Cut, c.Params = "mlp", []int{8, 6, 4}, 1, protect.Params{"mid_lambda": 0.1, "mixup_alpha": 1}
	if _, _, err := c.BuildTop(nil); err == nil {
		t.Error("MID and mixup together accepted")
	}
}
