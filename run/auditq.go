package run

import (
	"fmt"
	"maps"
	"sync"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// auditQueue records each step (the audit's attacks, batches.jsonl, the
// hooks, the dump) on a goroutine of its own, so the next step trains
// while the last one is audited. The batches are recorded one at a time
// in step order, from copies of what the step left, so every figure is
// the same as when recording inline; only the work that must see the
// models of that step (the clean gradient, the cosine attack's oracle) is
// done before the step ends. At most queueSlots batches wait; wait
// returns once every queued batch is recorded, and is called before each
// evaluation is recorded and when training ends, so evaluations and the
// summary see every batch before them.
type auditQueue struct {
	rec  *rundir.Recorder
	dump func(*audit.Batch) error
	free chan *auditSlot
	work chan *auditSlot
	busy sync.WaitGroup
	// outputs says the recording reads the batches' layer outputs; without
	// it push copies the gradients only.
	outputs bool

	mu  sync.Mutex
	err error // the first recording error
}

// queueSlots is how many steps may wait to be recorded: two keep the
// recorder busy while the step fills the other.
const queueSlots = 2

// auditSlot holds one step's copies; its buffers are reused.
type auditSlot struct {
	act                   active.Observation
	batch                 audit.Batch
	labels                []uint8
	ids                   []uint64
	grads, outputs, cln   []*tensor.Matrix
	gradBuf, outBuf, cBuf []*tensor.Matrix
}

func newAuditQueue(rec *rundir.Recorder, dump func(*audit.Batch) error) *auditQueue {
	q := &auditQueue{rec: rec, dump: dump, free: make(chan *auditSlot, queueSlots), work: make(chan *auditSlot, queueSlots)}
	for range queueSlots {
		q.free <- &auditSlot{}
	}
	go q.loop()
	return q
}

func (q *auditQueue) loop() {
	for s := range q.work {
		if q.failed() == nil {
			var err error
			if _, err = q.rec.Batch(rundir.Observation{Active: &s.act, Audit: &s.batch}); err == nil && q.dump != nil {
				err = q.dump(&s.batch)
			}
			if err != nil {
				q.mu.Lock()
				q.err = err
				q.mu.Unlock()
			}
		}
		q.free <- s
		q.busy.Done()
	}
}

// failed returns the first recording error.
func (q *auditQueue) failed() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// push queues one step for recording: a's and b's contents are copied
// (b.Clean, when set, is called now), so the caller may reuse them once
// push returns. It returns an earlier recording error instead.
func (q *auditQueue) push(a *active.Observation, b *audit.Batch, needClean bool) error {
	if err := q.failed(); err != nil {
		return err
	}
	s := <-q.free
	var clean []*tensor.Matrix
	if needClean && b.Clean != nil {
		var err error
		if clean, err = b.Clean(); err != nil {
			q.free <- s
			return fmt.Errorf("audit: step %d: clean gradients: %w", b.Step, err)
		}
	}
	s.act = *a
	s.labels = append(s.labels[:0], a.Labels...)
	s.act.Labels = s.labels
	s.act.Stats = maps.Clone(a.Stats)
	s.act.Clean, s.act.Protected, s.act.Probs, s.act.LossLabels, s.act.Rows = nil, nil, nil, nil, nil
	s.ids = append(s.ids[:0], b.IDs...)
	s.grads, s.gradBuf = copyMatrices(s.grads, s.gradBuf, b.Grads)
	s.outputs = s.outputs[:0]
	if q.outputs {
		s.outputs, s.outBuf = copyMatrices(s.outputs, s.outBuf, b.Outputs)
	}
	s.cln, s.cBuf = copyMatrices(s.cln, s.cBuf, clean)
	s.batch = audit.Batch{Step: b.Step, Epoch: b.Epoch, IDs: s.ids, Labels: s.labels, Layers: b.Layers,
		Grads: s.grads, Outputs: s.outputs}
	if clean != nil {
		c := s.cln
		s.batch.Clean = func() ([]*tensor.Matrix, error) { return c, nil }
	}
	q.busy.Add(1)
	q.work <- s
	return nil
}

// wait returns once every queued step is recorded, with the first
// recording error.
func (q *auditQueue) wait() error {
	if q == nil {
		return nil
	}
	q.busy.Wait()
	return q.failed()
}

// close waits for the queue and stops its goroutine.
func (q *auditQueue) close() error {
	if q == nil {
		return nil
	}
	err := q.wait()
	close(q.work)
	return err
}

// copyMatrices copies src (nil entries stay nil) into dst, reusing the
// matrices kept in buf; it returns dst and buf.
func copyMatrices(dst, buf, src []*tensor.Matrix) ([]*tensor.Matrix, []*tensor.Matrix) {
	dst = dst[:0]
	for i, m := range src {
		if i >= len(buf) {
			buf = append(buf, nil)
		}
		if m == nil {
			dst = append(dst, nil)
			continue
		}
		buf[i] = buf[i].Resize(m.Rows, m.Cols)
		copy(buf[i].Data, m.Data)
		dst = append(dst, buf[i])
	}
	return dst, buf
}
