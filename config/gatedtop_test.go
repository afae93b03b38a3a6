package config

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// gatedTop builds a small gated top over k parties of width 2.
func gatedTop(t *testing.T, k int) *GatedTop {
	t.Helper()
	inner, err := model.NewTop(model.Config{Widths: []int{2, 4}, Cut: 1, EmbDim: 1, L2: -1, LR: 1e-2, EmbInit: 0.05, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGatedTop(inner, k, 2, 1e-1)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGatedTopSaveLoad trains a gated top a few steps (θ moves from 0),
// saves it, loads it into a fresh one and checks θ, the logits and the
// next step agree; a checkpoint of another number of parties, a cut one
// and one of a top without the gate are refused.
func TestGatedTopSaveLoad(t *testing.T) {
	a := gatedTop(t, 2)
	e := &tensor.Matrix{Rows: 3, Cols: 4, Data: []float32{0.5, -0.2, 1.5, 0.3, 0.1, 0.9, -1.1, 0.4, 0.7, 0.2, 0.6, -0.8}}
	step := func(g *GatedTop) []float32 {
		logits, err := g.Forward(e, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := slices.Clone(logits)
		d := make([]float32, len(logits))
		for i := range d {
			d[i] = logits[i] - float32(i%2) // a BCE-like gradient
		}
		if _, err := g.Backward(d); err != nil {
			t.Fatal(err)
		}
		if err := g.Step(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for range 5 {
		step(a)
	}
	if w := a.Gate.Weights(); w[0] == 0.5 {
		t.Fatalf("θ did not move in 5 steps: α = %v", w)
	}
	var buf bytes.Buffer
	if err := a.Save(&buf); err != nil {
		t.Fatal(err)
	}
	b := gatedTop(t, 2)
	if err := b.Load(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Gate.Params()[0].W.Data, b.Gate.Params()[0].W.Data) {
		t.Errorf("θ after load %v, saved %v", b.Gate.Params()[0].W.Data, a.Gate.Params()[0].W.Data)
	}
	if la, lb := step(a), step(b); !slices.Equal(la, lb) {
		t.Errorf("logits after load %v, before %v", lb, la)
	}
	if la, lb := step(a), step(b); !slices.Equal(la, lb) {
		t.Errorf("the step after load differs: %v, %v", lb, la)
	}
	for _, c := range []struct {
		name string
		raw  []byte
		into *GatedTop
		want string
	}{
		{"three parties", buf.Bytes(), gatedTop(t, 3), "the gate"},
		{"cut short", buf.Bytes()[:buf.Len()-5], gatedTop(t, 2), "gated aggregation's state"},
		{"a top without the gate", func() []byte {
			var w bytes.Buffer
			if err := a.Top.Save(&w); err != nil {
				t.Fatal(err)
			}
			return w.Bytes()
		}(), gatedTop(t, 2), "overruns"},
	} {
		if err := c.into.Load(bytes.NewReader(c.raw)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: load gave %v, want an error naming %q", c.name, err, c.want)
		}
	}
}
