package passive

import (
	"context"
	"fmt"
	"time"

	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// The pipelined schedule (Config.Staleness k > 0), exactly:
//
//   - Batch s is sent once the gradients of batches 0, …, a(s)−1 have
//     been applied, a(s) = max(s−k, d(s)), where d(s) is the last drain
//     point at or before s: a multiple of EvalEvery or of DrainEvery (an
//     evaluation or a checkpoint then sees no batch in flight). Its
//     forward uses those parameters: it lacks the updates of at most the
//     k batches before it.
//   - The gradient of batch t is applied when it arrives, in order: the
//     embedding of batch t is recomputed at the current parameters (the
//     activations of its send were overwritten by later forwards), the
//     received gradient is backpropagated through it and the optimiser
//     steps. For a bottom whose Jacobian does not depend on its
//     parameters (a linear one) this is exactly the gradient at the
//     parameters of the send; otherwise it is FedBCD's rule of a cached
//     partner derivative with the own part at current parameters.
//   - The active party trains on every batch as it arrives: its top is
//     never stale.
//
// Nothing depends on timing, so a given k gives the same records in one
// process and in two.

// Linear weight prediction (Config.StalenessPrediction F > 0): batch s
// is forwarded, for sending only, with the bottom's weights moved by
// F·L·Q·Δ, where L = s − (gradients applied) is how many updates the
// exact protocol would have applied before this forward and the passive
// has not, Q the updates per gradient and Δ the change of the bottom's
// last Step (SpecTrain [Chen18], Kosson et al.'s LWP [Kosson21] and
// XPipe's Adam-based prediction [Guan19] extrapolate the same way). The
// weights are restored at once; the gradient, when it arrives, is still
// applied through a forward at the current weights. Δ counts only once a
// Step has followed the last point where nothing was in flight (the
// start, every drain point): a run resumed from a checkpoint, which lies
// at a drain point, then predicts exactly as an uninterrupted one.

// maxPrediction bounds Config.StalenessPrediction.
const maxPrediction = 16

// slot is one batch in flight.
type slot struct {
	epoch, batch int
	rows         []int
	ids          []uint64
	sent         tensor.Matrix // the embedding as sent (rounded, replaced)
}

// checkOverlap refuses staleness and local steps out of range.
func checkOverlap(cfg Config) error {
	switch {
	case cfg.Staleness < 0 || cfg.Staleness+1 > transport.MaxInFlight:
		return fmt.Errorf("passive: staleness %d, want 0 to %d", cfg.Staleness, transport.MaxInFlight-1)
	case cfg.DrainEvery < 0:
		return fmt.Errorf("passive: drain every %d steps, want ≥ 0", cfg.DrainEvery)
	case cfg.LocalSteps < 0:
		return fmt.Errorf("passive: %d local steps, want ≥ 1 (0: 1)", cfg.LocalSteps)
	case !(cfg.StalenessPrediction >= 0 && cfg.StalenessPrediction <= maxPrediction):
		return fmt.Errorf("passive: staleness prediction %v, want 0 to %v", cfg.StalenessPrediction, maxPrediction)
	case cfg.StalenessPrediction > 0 && cfg.Staleness == 0:
		return fmt.Errorf("passive: staleness prediction %v with staleness 0: the exact protocol sends no batch ahead of its updates", cfg.StalenessPrediction)
	}
	return nil
}

// mayAhead reports whether batch s may be sent before the gradients of
// the batches from p.step on have been applied: no drain point lies in
// (p.step, s].
func (p *Passive) mayAhead(s int64) bool {
	for _, n := range []int{p.cfg.EvalEvery, p.cfg.DrainEvery} {
		if n > 0 && s-s%int64(n) > p.step {
			return false
		}
	}
	return true
}

// pipeStep fills the pipeline as the schedule allows, then receives and
// applies the gradient of batch p.step.
func (p *Passive) pipeStep(ctx context.Context, pl transport.Pipeline) error {
	start := time.Now()
	var waited time.Duration
	defer func() {
		p.timing.Steps++
		p.timing.Exchange += waited
		p.timing.Compute += time.Since(start) - waited
	}()
	k := int64(p.cfg.Staleness)
	if p.slots == nil {
		p.slots = make([]slot, k+1)
		p.next = p.step
	}
	total := p.TotalSteps()
	for p.next < total && p.next-p.step <= k && (p.next == p.step || p.mayAhead(p.next)) {
		t := time.Now()
		if err := p.sendAhead(ctx, pl); err != nil {
			return err
		}
		waited += time.Since(t) - p.lastCompute
	}
	t := time.Now()
	bw, err := pl.Receive(ctx)
	waited += time.Since(t)
	if err != nil {
		return fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	return p.apply(bw)
}

// sendAhead computes and sends the embedding of batch p.next.
func (p *Passive) sendAhead(ctx context.Context, pl transport.Pipeline) error {
	start := time.Now()
	s := p.next
	sl := &p.slots[s%int64(len(p.slots))]
	epoch, b := p.sched.Position(s)
	if b == 0 || p.order == nil {
		p.order = p.sched.Order(epoch, p.order)
	}
	rows := p.sched.Rows(p.order, b)
	sl.epoch, sl.batch = epoch, b
	sl.rows = append(sl.rows[:0], rows...)
	sl.ids = gatherIDs(sl.ids, p.train.IDs, rows)
	if s == p.step {
		p.stepped = false // nothing in flight: the last Step is not this stretch's
	}
	e, err := p.predictedForward(s, sl.rows)
	if err != nil {
		return fmt.Errorf("passive: step %d: %w", s, err)
	}
	if err := tensor.CheckFinite(fmt.Sprintf("passive: step %d: cut-layer embedding", s), e); err != nil {
		return err
	}
	sl.sent.Resize(e.Rows, e.Cols)
	copy(sl.sent.Data, e.Data)
	if p.cfg.WireEmbedding != wire.F32 {
		if err := p.cfg.WireEmbedding.Round(&sl.sent); err != nil {
			return fmt.Errorf("passive: step %d: cut-layer embedding: %w", s, err)
		}
	}
	if p.cfg.Send != nil {
		saved := p.step
		p.step = s // the tamper sees the batch's own step
		out, err := p.substitute(&sl.sent, true)
		p.step = saved
		if err != nil {
			return err
		}
		copy(sl.sent.Data, out.Data)
	}
	p.lastCompute = time.Since(start)
	if err := pl.Send(ctx, &transport.Forward{
		Phase: transport.Train, Step: s, Epoch: epoch, Batch: b, IDs: sl.ids, Embedding: &sl.sent,
	}); err != nil {
		return fmt.Errorf("passive: step %d: %w", s, err)
	}
	p.next++
	return nil
}

// predictedForward forwards the rows of batch s for sending: under
// linear weight prediction with weights extrapolated over the gradients
// not yet applied, otherwise as trainForward.
func (p *Passive) predictedForward(s int64, rows []int) (*tensor.Matrix, error) {
	lag := s - p.step
	if p.cfg.StalenessPrediction == 0 || lag == 0 || !p.stepped {
		return p.trainForward(rows)
	}
	ex := p.bottom.(model.Extrapolator) // checked by New
	q := max(p.cfg.LocalSteps, 1)
	if err := ex.Extrapolate(float32(p.cfg.StalenessPrediction * float64(lag) * float64(q))); err != nil {
		return nil, err
	}
	defer ex.Restore()
	return p.trainForward(rows)
}

// trainForward forwards the training rows in training mode.
func (p *Passive) trainForward(rows []int) (*tensor.Matrix, error) {
	p.train.X.Gather(rows, &p.batch)
	if m, ok := p.bottom.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	return p.bottom.Forward(&p.batch)
}

// apply applies the answer to batch p.step: the recomputed forward, the
// backward of the received gradient, the observer, the update and the
// local steps.
func (p *Passive) apply(bw *transport.Backward) error {
	sl := &p.slots[p.step%int64(len(p.slots))]
	if err := transport.ValidateBackward(bw, p.step, sl.batch, sl.sent.Rows, sl.sent.Cols); err != nil {
		return fmt.Errorf("passive: refusing the answer: %w", err)
	}
	if p.cfg.Check != nil {
		if err := p.cfg.Check(p.step, bw.Grad); err != nil {
			return err
		}
	}
	if _, err := p.trainForward(sl.rows); err != nil {
		return fmt.Errorf("passive: step %d: recomputing the embedding: %w", p.step, err)
	}
	grads, err := p.backward(bw.Grad)
	if err != nil {
		return err
	}
	p.ob = Observation{Step: p.step, Epoch: sl.epoch, Batch: sl.batch, IDs: sl.ids, Rows: sl.rows, Grads: grads}
	return p.finish(&p.ob, &sl.sent, bw.Grad)
}

// finish ends the training step of ob (its gradients backpropagated from
// the received g): the observer sees the bottom's outputs with the cut
// output replaced by sent (nil: as it is), the bottom steps and takes its
// local steps on g.
func (p *Passive) finish(ob *Observation, sent, g *tensor.Matrix) error {
	if p.cfg.Observer != nil {
		outs := p.bottom.Outputs()
		if sent != nil && len(outs) > 0 {
			p.outs = append(p.outs[:0], outs...)
			p.outs[len(outs)-1] = sent
			outs = p.outs
		}
		ob.Outputs = outs
		if err := p.cfg.Observer(ob); err != nil {
			return err
		}
	}
	if err := p.bottom.Step(); err != nil {
		return fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	p.stepped = true
	if p.celu != nil && p.cfg.LocalSteps > 1 {
		if err := p.celuSteps(ob.Rows, sent, g); err != nil {
			return err
		}
	} else if err := p.localSteps(g); err != nil {
		return err
	}
	p.step++
	return nil
}

// backward backpropagates g in training mode (a layer that samples in
// training keeps the noise of its last training forward).
func (p *Passive) backward(g *tensor.Matrix) ([]*tensor.Matrix, error) {
	if m, ok := p.bottom.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(true)
		defer m.SetTraining(false)
	}
	grads, err := p.bottom.Backward(g)
	if err != nil {
		return nil, fmt.Errorf("passive: step %d: %w", p.step, err)
	}
	return grads, nil
}

// localSteps takes Config.LocalSteps−1 further updates on the batch in
// p.batch with the cached gradient g (FedBCD): each recomputes the
// embedding at the current parameters, backpropagates g and steps.
func (p *Passive) localSteps(g *tensor.Matrix) error {
	for q := 1; q < p.cfg.LocalSteps; q++ {
		if m, ok := p.bottom.(interface{ SetTraining(bool) }); ok {
			m.SetTraining(true)
			defer m.SetTraining(false)
		}
		if _, err := p.bottom.Forward(&p.batch); err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
		if _, err := p.bottom.Backward(g); err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
		if err := p.bottom.Step(); err != nil {
			return fmt.Errorf("passive: step %d: local step %d: %w", p.step, q, err)
		}
	}
	return nil
}
