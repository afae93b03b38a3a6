package integrity

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/nn"
)

// sgdMomentum is the momentum of both local SGD optimisers (the authors'
// setting in Fu et al.'s code).
const sgdMomentum = 0.9

func init() {
	RegisterOptimizer(OptimizerSpec{Name: "sgd",
		Help: "SGD with momentum 0.9 (the honest control of malicious_sgd)",
		New:  func(lr float64) Optimizer { return &localSGD{lr: lr, momentum: sgdMomentum} }})
}

// localSGD is SGD with momentum (PyTorch's form without dampening: the
// first step's buffer b is the gradient, then b ← μ·b + g) whose step
// may be scaled element by element: with gamma > 0, from the second step
// each element's step is s = b·r, r = clamp(1 + γ·b/(s' + 10⁻⁷), 1, rMax),
// s' its previous step — Fu et al.'s malicious local optimiser: while an
// element's direction holds, its step grows (r → (1+√5)/2 for a constant
// gradient), bounded by rMax; a reversal gets r = 1. The buffer stays
// unscaled (in the authors' PyTorch code the gradient tensor aliases the
// momentum buffer, so its in-place scaling also lands in the buffer
// unless zero_grad zeroes it in place; with the buffer scaled the step
// grows without bound even under a vanishing gradient). With gamma 0, r is
// 1: plain SGD with momentum.
type localSGD struct {
	lr, momentum, gamma, rMax float64
	buf, last                 [][]float32
	steps                     int64 // Steps taken (0: the next is the first)
}

// alloc sizes the optimiser's state for params on first use and checks
// that later calls pass the same parameters.
func (o *localSGD) alloc(params []*nn.Param) {
	if o.buf == nil {
		for _, p := range params {
			o.buf = append(o.buf, make([]float32, len(p.W.Data)))
			o.last = append(o.last, make([]float32, len(p.W.Data)))
		}
	}
	if len(o.buf) != len(params) {
		panic(fmt.Sprintf("integrity: local SGD holds state for %d parameters, given %d", len(o.buf), len(params)))
	}
}

// CheckpointState implements model.CheckpointedStepper: per parameter
// the momentum buffer and the last step, and the step count (which tells
// the first step, plain SGD, from the later ones).
func (o *localSGD) CheckpointState(params []*nn.Param) (names []string, data [][]float32, counters []*int64) {
	o.alloc(params)
	for i := range params {
		names = append(names, fmt.Sprintf("param%d.sgd_momentum", i), fmt.Sprintf("param%d.sgd_last_step", i))
		data = append(data, o.buf[i], o.last[i])
	}
	return names, data, []*int64{&o.steps}
}

// Step implements Optimizer.
func (o *localSGD) Step(params []*nn.Param) {
	o.alloc(params)
	first := o.steps == 0
	o.steps++
	for i, p := range params {
		buf, last, w, g := o.buf[i], o.last[i], p.W.Data, p.G.Data
		for j := range w {
			b := float64(g[j])
			if !first {
				b += o.momentum * float64(buf[j])
			}
			buf[j] = float32(b)
			s := b
			if o.gamma > 0 && !first {
				r := 1 + o.gamma*b/(float64(last[j])+1e-7)
				s *= math.Min(math.Max(r, 1), o.rMax)
			}
			last[j] = float32(s)
			w[j] -= float32(o.lr * s)
		}
	}
}
