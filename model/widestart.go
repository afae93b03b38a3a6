package model

import (
	"fmt"
	"math"
)

// WideStart is a logistic regression over exactly the wide part's
// columns — the baseline the active party fits on its own columns — to
// start the wide part of Wide&Deep from (DeepTop.StartWide).
type WideStart struct {
	// W are its weights: for each categorical column in order, one per
	// id of its vocabulary (cardinality many), then one per numeric
	// column, applied to the standardised value (x − Mean[k])·Scale[k].
	W []float64
	// B is its bias.
	B float64
	// Mean and Scale are the numeric columns' standardisation (Scale 0:
	// a column constant in the rows fitted, whose weight is ignored).
	Mean, Scale []float64
	// Lambda is the L2 strength of its fit, (λ/2)‖w‖² on the mean loss;
	// with Penalise the wide part keeps it while training.
	Lambda   float64
	Penalise bool
}

// StartWide sets the wide part to the logistic regression s and the
// deep part's logit weights to zero, so that the model's logit before
// its first step is s's logit on every row: training starts at the
// baseline, and the deep part adds to it only what the gradient finds.
// With s.Penalise the wide weights keep s's L2 penalty while training
// (on the same scale as in s's fit, whatever encoding the wide part
// reads), so that s stays a stationary point of the wide part alone.
func (t *DeepTop) StartWide(s WideStart) error {
	if t.wide == nil {
		return fmt.Errorf("model: starting the wide part from a logistic regression: the model has no wide part")
	}
	nOneHot := 0
	for _, c := range t.wide.Cardinality {
		nOneHot += c
	}
	k := t.wide.NumDense
	if len(s.W) != nOneHot+k || len(s.Mean) != k || len(s.Scale) != k {
		return fmt.Errorf("model: starting the wide part: a logistic regression of %d weights and %d numeric columns for a wide part of %d one-hot ids and %d numeric columns",
			len(s.W), len(s.Mean), nOneHot, k)
	}
	for _, v := range s.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("model: starting the wide part: the logistic regression has a weight %v", v)
		}
	}
	if s.Lambda < 0 || math.IsNaN(s.Lambda) {
		return fmt.Errorf("model: starting the wide part: L2 strength %v, want ≥ 0", s.Lambda)
	}
	off := 0
	for f, c := range t.wide.Cardinality {
		for id := range c {
			t.wideEmb.Weight(f, id)[0] = float32(s.W[off+id])
		}
		off += c
	}
	bias := s.B
	if k > 0 {
		// The wide part reads z = (x − m)·r (m = 0, r = 1: min–max values
		// as given). s's term w·(x − Mean)·Scale is v·z + c with
		// v = w·Scale/r and c = w·Scale·(m − Mean).
		mean, inv := make([]float32, k), make([]float32, k)
		for j := range k {
			inv[j] = 1
		}
		if t.wideScale != nil {
			copy(mean, t.wideScale.meanInv[:k])
			copy(inv, t.wideScale.meanInv[k:])
		}
		t.widePenalty = nil
		if s.Penalise && s.Lambda > 0 {
			t.widePenalty = make([]float32, k)
		}
		for j := range k {
			ws := s.W[nOneHot+j] * s.Scale[j]
			v := 0.0
			if inv[j] != 0 {
				v = ws / float64(inv[j])
				bias += ws * (float64(mean[j]) - s.Mean[j])
			}
			t.wideLin.W.Data[j] = float32(v)
			if t.widePenalty != nil {
				// (λ/2)·w² with w = v·r/Scale: the gradient in v is
				// λ·(r/Scale)²·v.
				p := s.Lambda
				if s.Scale[j] > 0 {
					p *= math.Pow(float64(inv[j])/s.Scale[j], 2)
				}
				t.widePenalty[j] = float32(p)
			}
		}
		t.wideLin.B.Data[0] = float32(bias)
	} else {
		t.logit.B.Data[0] = float32(bias)
	}
	if t.wideEmb != nil && s.Penalise && s.Lambda > 0 {
		// Embedding's L2 adds 2·L2·w on the rows a batch touches.
		t.wideEmb.L2 = float32(s.Lambda / 2)
	}
	clear(t.logit.W.Data)
	return nil
}

// penaliseWide adds the wide linear weights' L2 gradient (StartWide
// with Penalise) to their gradient of the last Backward.
func (t *DeepTop) penaliseWide() {
	if t.widePenalty == nil {
		return
	}
	g := t.wideLin.Params()[0].G.Data
	for j, w := range t.wideLin.W.Data {
		g[j] += t.widePenalty[j] * w
	}
}
