package passive

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/internal/workset"
	"github.com/splitguard/splitguard/tensor"
)

// celu is the passive party's CELU-VFL state (Fu et al., PVLDB 2022): the
// workset of the last W batches' received gradients, with the rows and
// the embedding sent for each.
type celu struct {
	table   *workset.Table
	slots   []celuSlot
	xi      float64 // instance-weighting threshold; weigh is false without one
	weigh   bool
	weights []float32
	g       *tensor.Matrix // the weighted cached gradient of a local step
}

// celuSlot is one cached batch: its rows, the gradient received (the
// partner's stale message) and the embedding sent (the stale statistic
// the instance weights compare the fresh embedding with).
type celuSlot struct {
	rows      []int
	grad, emb *tensor.Matrix
}

// newCELU returns the CELU-VFL state of cfg, or nil when cfg asks for
// FedBCD's plain local steps (a cache of one batch, no weighting).
func newCELU(cfg Config) (*celu, error) {
	switch {
	case cfg.LocalCache < 0:
		return nil, fmt.Errorf("passive: a local cache of %d batches, want ≥ 1 (0: 1)", cfg.LocalCache)
	case cfg.LocalCache <= 1 && cfg.LocalWeightThreshold == nil:
		return nil, nil
	case cfg.Staleness > 0:
		return nil, fmt.Errorf("passive: CELU-VFL's cache and weighting with staleness %d are not built (staleness 0 only)", cfg.Staleness)
	}
	w := max(cfg.LocalCache, 1)
	t, err := workset.New(w)
	if err != nil {
		return nil, err
	}
	c := &celu{table: t, slots: make([]celuSlot, w), g: &tensor.Matrix{}}
	if cfg.LocalWeightThreshold != nil {
		c.xi, c.weigh = *cfg.LocalWeightThreshold, true
	}
	return c, nil
}

// celuSteps caches the batch just trained (its rows, the received
// gradient g and the embedding sent) and takes Config.LocalSteps−1 local
// updates of the bottom, each on the least-used cached batch: the
// embedding recomputed at the current parameters, the cached gradient
// backpropagated through it (each row scaled by the cosine similarity of
// the fresh embedding with the one sent, rows under the threshold
// dropped, when weighting is on) and the optimiser step.
func (p *Passive) celuSteps(rows []int, sent, g *tensor.Matrix) error {
	c := p.celu
	if sent == nil {
		outs := p.bottom.Outputs()
		if len(outs) == 0 {
			return fmt.Errorf("passive: step %d: the bottom kept no output to cache", p.step)
		}
		sent = outs[len(outs)-1]
	}
	sl := &c.slots[c.table.Add()]
	sl.rows = append(sl.rows[:0], rows...)
	sl.grad = sl.grad.Resize(g.Rows, g.Cols)
	copy(sl.grad.Data, g.Data)
	sl.emb = sl.emb.Resize(sent.Rows, sent.Cols)
	copy(sl.emb.Data, sent.Data)
	if m, ok := p.bottom.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	for q := 1; q < p.cfg.LocalSteps; q++ {
		sl := &c.slots[c.table.Pick()]
		p.train.X.Gather(sl.rows, &p.batch)
		fresh, err := p.bottom.Forward(&p.batch)
		if err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
		grad := sl.grad
		if c.weigh {
			c.weights = buf.Grow(c.weights, sl.grad.Rows)
			if _, err := workset.Weights(sl.emb.Data, fresh.Data, sl.emb.Cols, c.xi, c.weights); err != nil {
				return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
			}
			c.g = c.g.Resize(sl.grad.Rows, sl.grad.Cols)
			for i, w := range c.weights {
				src, dst := sl.grad.Data[i*sl.grad.Cols:(i+1)*sl.grad.Cols], c.g.Data[i*sl.grad.Cols:(i+1)*sl.grad.Cols]
				for j, v := range src {
					dst[j] = v * w
				}
			}
			grad = c.g
		}
		if _, err := p.bottom.Backward(grad); err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
		if err := p.bottom.Step(); err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
	}
	return nil
}
