package model

import "github.com/splitguard/splitguard/nn"

// ParamStepper updates parameters from their gradients (nn.Param.G), one
// step per call; nn.Adam is one.
type ParamStepper interface {
	Step(params []*nn.Param)
}

// CheckpointedStepper is a ParamStepper whose state a checkpoint holds,
// so that a resumed run steps exactly as an uninterrupted one.
type CheckpointedStepper interface {
	ParamStepper
	// CheckpointState returns the stepper's state for params: named
	// float slices (the stepper's own memory, allocated here if no Step
	// has run; Load writes into them) and its step counters.
	CheckpointState(params []*nn.Param) (names []string, data [][]float32, counters []*int64)
}

// SetStepper makes s update the bottom's dense layers in place of its
// Adam (a passive party running another optimiser, e.g. the malicious
// local optimiser of integrity). The categorical embeddings keep their
// LazyAdam. A checkpoint holds s's state beside the (unused) Adam's when
// s is a CheckpointedStepper, and then loads only into a bottom with a
// stepper of the same sections.
func (b *DeepBottom) SetStepper(s ParamStepper) { b.stepper = s }

// addStepper appends the state of a CheckpointedStepper st to s.
func (s *state) addStepper(params []*nn.Param, st ParamStepper) {
	cs, ok := st.(CheckpointedStepper)
	if !ok {
		return
	}
	names, data, counters := cs.CheckpointState(params)
	for i, n := range names {
		s.sections = append(s.sections, section{n, data[i]})
	}
	s.counters = append(s.counters, counters...)
}
