package model

import "github.com/splitguard/splitguard/nn"

// ParamStepper updates parameters from their gradients (nn.Param.G), one
// step per call; nn.Adam is one.
type ParamStepper interface {
	Step(params []*nn.Param)
}

// SetStepper makes s update the bottom's dense layers in place of its
// Adam (a passive party running another optimiser, e.g. the malicious
// local optimiser of integrity). The categorical embeddings keep their
// LazyAdam, and a checkpoint holds Adam's state, not s's.
func (b *DeepBottom) SetStepper(s ParamStepper) { b.stepper = s }
