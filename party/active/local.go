package active

import (
	"fmt"

	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// localSteps takes Config.LocalSteps−1 further updates of the top on the
// batch just trained (FedBCD, Liu et al., IEEE TSP 2022: each party runs
// Q local updates per exchange on the partner's cached message). The
// active party's cached message is the embedding e it received; with its
// own labels it has all it needs, so each local update is an exact step
// on its loss with the embedding held fixed: forward, loss on the
// batch's targets (re-mixed by a mixup top, as in any training forward),
// backward and the optimiser step. No gradient is sent or observed for
// them; add-on loss terms change only the gradient of the embedding and
// take no part.
func (a *Active) localSteps(e *tensor.Matrix, rows []int, raw []float32, clean *tensor.Matrix) error {
	if a.cfg.LocalSteps <= 1 {
		return nil
	}
	if a.celu != nil {
		return a.celuSteps(e, rows, raw, clean)
	}
	for q := 1; q < a.cfg.LocalSteps; q++ {
		logits, err := a.top.Forward(e, a.wideBatch(a.train.X, rows))
		if err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
		y := raw
		if m, ok := a.top.(targetMixer); ok {
			y = m.MixTargets(raw)
		}
		if _, err := nn.SigmoidBCE(logits, y, a.dLogits); err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
		if _, err := a.top.Backward(a.dLogits); err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
		if err := a.top.Step(); err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
	}
	return nil
}
