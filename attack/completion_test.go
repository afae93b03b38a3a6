package attack

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// separable draws n rows of width d whose first coordinate separates the
// classes with a margin (positives in [1, 2], negatives in [−2, −1]); the
// other coordinates are noise.
func separable(r *rand.Rand, n, d int, posRate float64) (*tensor.Matrix, []uint8) {
	x := tensor.New(n, d)
	y := make([]uint8, n)
	for i := range n {
		row := x.Row(i)
		for j := range row {
			row[j] = float32(0.5 * r.NormFloat64())
		}
		if r.Float64() < posRate {
			y[i] = 1
			row[0] = float32(1 + r.Float64())
		} else {
			row[0] = float32(-1 - r.Float64())
		}
	}
	return x, y
}

func TestCompletionSeparable(t *testing.T) {
	for _, c := range []struct {
		semi  bool
		known int
	}{{false, 10}, {false, 40}, {true, 10}, {true, 40}} {
		t.Run(fmt.Sprintf("%s/%d", NewCompletion(c.semi).Name(), c.known), func(t *testing.T) {
			semi := c.semi
			r := rand.New(rand.NewPCG(7, 1))
			const d, posRate = 8, 0.2
			// The known labels, half of each class.
			known := tensor.New(c.known, d)
			labels := make([]uint8, c.known)
			for k := 0; k < c.known; {
				x, y := separable(r, 1, d, 0.5)
				want := uint8(0)
				if k < c.known/2 {
					want = 1
				}
				if y[0] != want {
					continue
				}
				copy(known.Row(k), x.Row(0))
				labels[k] = want
				k++
			}
			unl, _ := separable(r, 2000, d, posRate)
			tgt, truth := separable(r, 1000, d, posRate)
			a := NewCompletion(semi)
			p, err := a.Complete(&CompletionInput{Known: known, Labels: labels, Unlabelled: unl, Target: tgt, Seed: 3}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if auc, _ := metrics.AUC(p, truth, nil); auc < 0.995 {
				t.Errorf("AUC %.4f on separable rows, want ≈ 1", auc)
			}
			correct := 0
			for i, v := range p {
				if (v >= 0.5) == (truth[i] == 1) {
					correct++
				}
			}
			if acc := float64(correct) / float64(len(p)); acc < 0.97 {
				t.Errorf("accuracy %.4f, want ≥ 0.97", acc)
			}
			if math.Abs(a.Prior-posRate) > 0.04 {
				t.Errorf("estimated prior %.4f, true share %.2f", a.Prior, posRate)
			}
		})
	}
}

func TestCompletionErrors(t *testing.T) {
	x := tensor.New(4, 3)
	bad := tensor.New(4, 3)
	bad.Data[5] = float32(math.NaN())
	for _, c := range []struct {
		name string
		in   CompletionInput
	}{
		{"one class", CompletionInput{Known: x, Labels: []uint8{1, 1, 1, 1}, Target: x}},
		{"label count", CompletionInput{Known: x, Labels: []uint8{1, 0}, Target: x}},
		{"label value", CompletionInput{Known: x, Labels: []uint8{1, 0, 2, 0}, Target: x}},
		{"width", CompletionInput{Known: x, Labels: []uint8{1, 0, 1, 0}, Target: tensor.New(2, 5)}},
		{"non-finite", CompletionInput{Known: x, Labels: []uint8{1, 0, 1, 0}, Target: bad}},
		{"no target", CompletionInput{Known: x, Labels: []uint8{1, 0, 1, 0}}},
	} {
		if _, err := NewCompletion(true).Complete(&c.in, nil); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

// TestEMPrior checks the prior estimate against the share the rows were
// drawn with: x ~ N(+1, 1) for positives and N(−1, 1) for negatives, whose
// posterior under a prior of ½ is σ(2x) in closed form.
func TestEMPrior(t *testing.T) {
	for _, pi := range []float64{0.05, 0.3, 0.5, 0.8} {
		r := rand.New(rand.NewPCG(11, uint64(pi*100)))
		q := make([]float64, 40000)
		for i := range q {
			x := r.NormFloat64() - 1
			if r.Float64() < pi {
				x += 2
			}
			q[i] = 1 / (1 + math.Exp(-2*x))
		}
		if got := EMPrior(q, 0.5); math.Abs(got-pi) > 0.015 {
			t.Errorf("π = %.2f: estimated %.4f", pi, got)
		}
	}
	if got := EMPrior(nil, 0.4); got != 0.4 {
		t.Errorf("no rows: %v, want the start 0.4", got)
	}
}
