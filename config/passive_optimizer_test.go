package config

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// TestPassiveOptimizerSteps: with passive_optimizer sgd at
// passive_optimizer_lr 0.1 (the run's Adam rate 10⁻³), the first step of
// the bottom's dense layers is w − 0.1·g exactly (SGD's first step is the
// gradient); the honest bottom's Adam moves each weight by ≈ 10⁻³·sign(g)
// instead.
func TestPassiveOptimizerSteps(t *testing.T) {
	def := Default()
	split, err := data.Generate(16, 0.3, 1, def.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"", "sgd"} {
		c := Default()
		c.Model, c.Layers, c.Cut, c.EmbedDim, c.HashBuckets, c.LR = "mlp", []int{3, 2}, 1, 1, 4, 1e-3
		c.PassiveOptimizer = opt
		if opt != "" {
			c.PassiveOptimizerLR = 0.1
		}
		b, err := c.BuildBottom(split.Train.X)
		if err != nil {
			t.Fatal(err)
		}
		var batch data.Batch
		split.Train.X.Gather([]int{0, 1, 2, 3}, &batch)
		e, err := b.Forward(&batch)
		if err != nil {
			t.Fatal(err)
		}
		g := tensor.New(e.Rows, e.Cols)
		for i := range g.Data {
			g.Data[i] = float32(i%3) - 0.7
		}
		if _, err := b.Backward(g); err != nil {
			t.Fatal(err)
		}
		params := b.(*model.DeepBottom).Dense()[0].Params()
		var before, grad [][]float32
		for _, p := range params {
			before = append(before, append([]float32(nil), p.W.Data...))
			grad = append(grad, append([]float32(nil), p.G.Data...))
		}
		if err := b.Step(); err != nil {
			t.Fatal(err)
		}
		for i, p := range params {
			for j, w := range p.W.Data {
				want := before[i][j] - 0.1*grad[i][j]
				if opt == "" {
					want = before[i][j] // Adam's first step: ±10⁻³ where g ≠ 0
					if grad[i][j] > 0 {
						want -= 1e-3
					} else if grad[i][j] < 0 {
						want += 1e-3
					}
				}
				if d := w - want; d > 1e-5 || d < -1e-5 {
					t.Fatalf("optimizer %q: parameter %s[%d] %g, want %g (gradient %g)", opt, p.Name, j, w, want, grad[i][j])
				}
			}
		}
	}
}

// TestPassiveOptimizerKeys: an unknown optimiser, a negative rate and a
// rate without an optimiser are refused naming the key.
func TestPassiveOptimizerKeys(t *testing.T) {
	for _, tc := range []struct {
		name, opt string
		lr        float64
		want      string
	}{
		{"unknown", "adagrad", 0, "key passive_optimizer)"},
		{"negative rate", "sgd", -1, "key passive_optimizer_lr"},
		{"rate alone", "", 0.1, "without a passive optimizer"},
	} {
		c := Default()
		c.PassiveOptimizer, c.PassiveOptimizerLR = tc.opt, tc.lr
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
	c := Default()
	c.PassiveOptimizer = "malicious_sgd"
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "passive_optimizer") {
		t.Errorf("malicious_sgd refused: %v", err)
	}
}
