package inproc

import (
	"context"
	"errors"
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

var _ transport.Pipeline = passiveEnd{}

// Send queues a Train message for the active party without waiting for
// its answer (transport.Pipeline).
func (e passiveEnd) Send(ctx context.Context, f *transport.Forward) error {
	p := e.p
	p.send.Lock()
	defer p.send.Unlock()
	select {
	case <-p.done:
		return ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkForward(f); err != nil {
		return err
	}
	if f.Phase != transport.Train {
		return fmt.Errorf("inproc: %s refused: only training messages are pipelined", where(f))
	}
	if p.have && !transport.Precedes(&p.last, f) {
		return fmt.Errorf("inproc: %s refused: it does not come after %s, already sent (a replay)", where(f), where(&p.last))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.broken:
		return fmt.Errorf("inproc: %s refused: an earlier Receive gave up, the pipeline is broken", where(f))
	case p.pending != nil:
		return fmt.Errorf("inproc: %s refused: %s is unanswered (sent by Exchange)", where(f), where(p.pending.f))
	case len(p.sent) >= transport.MaxInFlight:
		return fmt.Errorf("inproc: %s refused: %d messages are in flight, at most %d", where(f), len(p.sent), transport.MaxInFlight)
	}
	ex := &exchange{f: f, answer: make(chan *transport.Backward, 1), abandoned: make(chan struct{}), piped: true}
	p.queue = append(p.queue, ex)
	p.sent = append(p.sent, ex)
	p.last = transport.Forward{Phase: f.Phase, Step: f.Step, Batch: f.Batch}
	p.have = true
	select {
	case p.queued <- struct{}{}:
	default:
	}
	return nil
}

// Receive waits for the answer to the oldest message sent with Send
// (transport.Pipeline). Its gradient is valid until the next Receive.
func (e passiveEnd) Receive(ctx context.Context) (*transport.Backward, error) {
	p := e.p
	p.mu.Lock()
	if p.broken {
		p.mu.Unlock()
		return nil, errors.New("inproc: Receive: an earlier Receive gave up, the pipeline is broken")
	}
	if len(p.sent) == 0 {
		p.mu.Unlock()
		return nil, errors.New("inproc: Receive with no message in flight")
	}
	ex := p.sent[0]
	if p.held != nil { // the caller is done with the last answer
		p.free = append(p.free, p.held)
		p.held = nil
	}
	p.mu.Unlock()
	select {
	case b := <-ex.answer:
		p.mu.Lock()
		p.sent = p.sent[1:]
		p.held = b.Grad
		p.mu.Unlock()
		return b, nil
	case <-p.done:
		p.abandon()
		return nil, ErrClosed
	case <-ctx.Done():
		p.abandon()
		return nil, ctx.Err()
	}
}

// InFlight is the number of messages sent with Send and not yet received.
func (e passiveEnd) InFlight() int {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return len(e.p.sent)
}

// abandon gives up every pipelined message in flight.
func (p *pipe) abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.broken = true
	for _, ex := range p.sent {
		close(ex.abandoned)
	}
	p.sent = nil
}

// nextQueued hands out the first queued message not yet delivered, or
// returns nil.
func (p *pipe) nextQueued() *transport.Forward {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ex := range p.queue {
		if !ex.delivered {
			ex.delivered = true
			return ex.f
		}
	}
	return nil
}

// replyQueued answers the first queued message, copying the gradient
// into a buffer of the pipe; p.mu is held.
func (p *pipe) replyQueued(b *transport.Backward) error {
	ex := p.queue[0]
	if err := checkBackward(ex.f, b); err != nil {
		return err
	}
	p.queue = p.queue[1:]
	select {
	case <-ex.abandoned:
		return fmt.Errorf("inproc: Reply to %s: the passive party stopped waiting for the answer", where(ex.f))
	default:
	}
	c := *b
	if b.Grad != nil {
		var g *tensor.Matrix
		if n := len(p.free); n > 0 {
			g, p.free = p.free[n-1], p.free[:n-1]
		} else {
			g = &tensor.Matrix{}
		}
		g.Rows, g.Cols = b.Grad.Rows, b.Grad.Cols
		g.Data = buf.Grow(g.Data, len(b.Grad.Data))
		copy(g.Data, b.Grad.Data)
		c.Grad = g
	}
	ex.answer <- &c
	return nil
}
