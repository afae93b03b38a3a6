package active

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/internal/workset"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// celu is the active party's CELU-VFL state (Fu et al., PVLDB 2022): the
// workset of the last W batches' received embeddings, with what each local
// update needs to train the top on them again.
type celu struct {
	table   *workset.Table
	slots   []celuSlot
	xi      float64 // instance-weighting threshold; weigh is false without one
	weigh   bool
	weights []float32
}

// celuSlot is one cached batch: the embedding received (the partner's
// stale message), its rows, its targets before mixing and the clean
// gradient of the embedding computed at its exchange (the stale
// statistic the instance weights compare with).
type celuSlot struct {
	emb, grad *tensor.Matrix
	rows      []int
	raw       []float32
}

// newCELU returns the CELU-VFL state of cfg, or nil when cfg asks for
// FedBCD's plain local steps (a cache of one batch, no weighting).
func newCELU(cfg Config) (*celu, error) {
	if cfg.LocalCache < 0 {
		return nil, fmt.Errorf("active: a local cache of %d batches, want ≥ 1 (0: 1)", cfg.LocalCache)
	}
	if cfg.LocalCache <= 1 && cfg.LocalWeightThreshold == nil {
		return nil, nil
	}
	w := max(cfg.LocalCache, 1)
	t, err := workset.New(w)
	if err != nil {
		return nil, err
	}
	c := &celu{table: t, slots: make([]celuSlot, w)}
	if cfg.LocalWeightThreshold != nil {
		c.xi, c.weigh = *cfg.LocalWeightThreshold, true
	}
	return c, nil
}

// celuSteps caches the batch just exchanged (embedding e, rows, targets
// raw, clean gradient g) and takes Config.LocalSteps−1 local updates of
// the top, each on the least-used cached batch: forward on its cached
// embedding, loss on its targets, each row's loss gradient weighted by
// the cosine similarity of the fresh gradient of the embedding with the
// cached one (rows under the threshold dropped) when weighting is on,
// backward and the optimiser step.
func (a *Active) celuSteps(e *tensor.Matrix, rows []int, raw []float32, g *tensor.Matrix) error {
	c := a.celu
	sl := &c.slots[c.table.Add()]
	sl.emb = sl.emb.Resize(e.Rows, e.Cols)
	copy(sl.emb.Data, e.Data)
	sl.grad = sl.grad.Resize(g.Rows, g.Cols)
	copy(sl.grad.Data, g.Data)
	sl.rows = append(sl.rows[:0], rows...)
	sl.raw = append(sl.raw[:0], raw...)
	for q := 1; q < a.cfg.LocalSteps; q++ {
		sl := &c.slots[c.table.Pick()]
		logits, err := a.top.Forward(sl.emb, a.wideBatch(a.train.X, sl.rows))
		if err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
		y := sl.raw
		if m, ok := a.top.(targetMixer); ok {
			y = m.MixTargets(sl.raw)
		}
		a.dLogits = buf.Grow(a.dLogits, len(sl.rows))
		if _, err := nn.SigmoidBCE(logits, y, a.dLogits); err != nil {
			return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
		}
		if c.weigh {
			fresh, err := a.top.Backward(a.dLogits)
			if err != nil {
				return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
			}
			c.weights = buf.Grow(c.weights, len(sl.rows))
			if _, err := workset.Weights(sl.grad.Data, fresh.Data, sl.grad.Cols, c.xi, c.weights); err != nil {
				return fmt.Errorf("active: step %d: local step %d: %w", a.step, q, err)
			}
			for i, w := range c.weights {
				a.dLogits[i] *= w
			}
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
