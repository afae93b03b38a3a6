package integrity

import (
	"math"
	"testing"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// TestMaliciousOptimizerByHand: three steps of malicious_sgd (lr 0.1,
// momentum 0.9, γ 1, ratio in [1, 5]) and of sgd on three elements from
// 0, against values worked out by hand (b the momentum buffer, s the
// step, w = −0.1·Σs):
//
//	a, gradients 1, 1, 1: b = s = 1; b = 1.9, r = 1 + 1.9/1 = 2.9,
//	  s = 5.51; b = 1 + 0.9·1.9 = 2.71, r = 1 + 2.71/5.51, s = 2.71·r.
//	b, gradients 1, −2, 0.5: b = s = 1; b = −1.1, r = −0.1 → 1, s = −1.1;
//	  b = 0.5 − 0.99 = −0.49, r = 1 + 0.49/1.1, s = −0.49·r.
//	c, gradients 1, 10, 0: b = s = 1; b = 10.9, r = 11.9 → 5, s = 54.5;
//	  b = 9.81 (the buffer unscaled), r = 1 + 9.81/54.5, s = 9.81·r.
//
// sgd: s = b = 1, 1.9, 2.71 / 1, −1.1, −0.49 / 1, 10.9, 9.81.
func TestMaliciousOptimizerByHand(t *testing.T) {
	grads := [][]float32{{1, 1, 1}, {1, -2, 10}, {1, 0.5, 0}} // per step: a, b, c
	for _, tc := range []struct {
		name string
		want []float64
	}{
		{"malicious_sgd", []float64{-0.1 * (1 + 5.51 + 2.71*(1+2.71/5.51)), -0.1 * (1 - 1.1 - 0.49*(1+0.49/1.1)), -0.1 * (1 + 54.5 + 9.81*(1+9.81/54.5))}},
		{"sgd", []float64{-0.1 * (1 + 1.9 + 2.71), -0.1 * (1 - 1.1 - 0.49), -0.1 * (1 + 10.9 + 9.81)}},
	} {
		opt, err := NewOptimizer(tc.name, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		p := &nn.Param{Name: "w", W: tensor.New(1, 3), G: tensor.New(1, 3)}
		for step := range 3 {
			for j := range 3 {
				p.G.Data[j] = grads[step][j]
			}
			opt.Step([]*nn.Param{p})
		}
		for j, w := range tc.want {
			if got := float64(p.W.Data[j]); math.Abs(got-w) > 1e-4*math.Max(1, math.Abs(w)) {
				t.Errorf("%s element %d: %.6f, want %.6f", tc.name, j, got, w)
			}
		}
	}
}

// TestNewOptimizerRefuses: an unknown name and a learning rate that is
// not positive are errors naming them.
func TestNewOptimizerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		lr   float64
	}{{"nope", 0.1}, {"sgd", 0}, {"malicious_sgd", math.NaN()}, {"sgd", -1}} {
		if _, err := NewOptimizer(tc.name, tc.lr); err == nil {
			t.Errorf("%s lr %g: no error", tc.name, tc.lr)
		}
	}
}
