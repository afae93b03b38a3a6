// Package inproc connects the two parties inside one process through Go
// channels. Messages are passed by pointer: a sender must not modify a
// message's matrices until the matching answer has arrived, which the
// lock-step protocol guarantees, and an answer is valid until the next
// Exchange.
//
// It keeps the contract of transport.PassiveConn and transport.ActiveConn
// (checked by transport/transporttest):
//
//   - malformed messages and answers are refused at the sender with an
//     error, in time independent of their size: NaN and ±Inf values are
//     passed on for the parties to refuse (each checks what it sends, and
//     transport.ValidateForward and ValidateBackward check what it
//     receives), as scanning every value once more here would cost a large
//     batch more than the exchange itself;
//   - a Forward that does not come after the last one sent
//     (transport.Precedes) is refused, an exact repeat included (there are
//     no retries in one process);
//   - a message sent while the previous one is unanswered is refused;
//   - a Reply to a message whose sender stopped waiting (its context
//     ended, or Close) returns an error.
//
// The passive end is also a transport.Pipeline (pipeline.go): training
// messages sent with Send wait in a queue for the active party's Recv,
// and their answers' gradients are copied, since the active party reuses
// its buffer for the next batch before the passive receives this one.
package inproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// Pipe returns the two connected ends of an in-process connection.
func Pipe() (transport.PassiveConn, transport.ActiveConn) {
	p := &pipe{fwd: make(chan *exchange), done: make(chan struct{}), queued: make(chan struct{}, 1)}
	return passiveEnd{p}, activeEnd{p}
}

type pipe struct {
	fwd       chan *exchange
	done      chan struct{} // closed by the passive's Close
	closeOnce sync.Once

	send sync.Mutex // serialises Exchange; guards last and have
	last transport.Forward
	have bool // last holds the last message sent

	mu      sync.Mutex
	pending *exchange // sent and not answered yet (Exchange)

	// The pipelined messages (Send): queue holds those sent and not yet
	// answered, in order (the first ones delivered to the active party),
	// sent those not yet received by the passive party; queued wakes a
	// waiting Recv. Guarded by mu; broken is set when a Receive gave up.
	queue, sent []*exchange
	queued      chan struct{}
	broken      bool
	free        []*tensor.Matrix // gradient copies to reuse
	held        *tensor.Matrix   // the copy the last Receive returned
}

// exchange is one message in flight and the way back for its answer.
type exchange struct {
	f         *transport.Forward
	answer    chan *transport.Backward // buffered: Reply never blocks
	abandoned chan struct{}            // closed when the sender stops waiting
	delivered bool                     // Recv handed f out; guarded by pipe.mu
	piped     bool                     // sent with Send: the answer's gradient is copied
}

type passiveEnd struct{ p *pipe }

// ErrClosed is returned by Exchange after Close.
var ErrClosed = errors.New("inproc: connection closed")

func (e passiveEnd) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	p := e.p
	p.send.Lock()
	defer p.send.Unlock()
	select {
	case <-p.done:
		return nil, ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkForward(f); err != nil {
		return nil, err
	}
	if p.have && !transport.Precedes(&p.last, f) {
		return nil, fmt.Errorf("inproc: %s refused: it does not come after %s, already sent (a replay)", where(f), where(&p.last))
	}
	ex := &exchange{f: f, answer: make(chan *transport.Backward, 1), abandoned: make(chan struct{})}
	p.mu.Lock()
	if q := p.pending; q != nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("inproc: %s refused: %s is unanswered (the protocol is lock-step)", where(f), where(q.f))
	}
	if len(p.sent) > 0 {
		q := p.sent[0]
		p.mu.Unlock()
		return nil, fmt.Errorf("inproc: %s refused: the pipelined %s is unanswered", where(f), where(q.f))
	}
	p.pending = ex
	p.mu.Unlock()
	select {
	case p.fwd <- ex:
	case <-p.done:
		p.unsend(ex)
		return nil, ErrClosed
	case <-ctx.Done():
		p.unsend(ex)
		return nil, ctx.Err()
	}
	p.last = transport.Forward{Phase: f.Phase, Step: f.Step, Batch: f.Batch}
	p.have = true
	select {
	case b := <-ex.answer:
		return b, nil
	case <-p.done:
		close(ex.abandoned)
		return nil, ErrClosed
	case <-ctx.Done():
		close(ex.abandoned)
		return nil, ctx.Err()
	}
}

// unsend forgets ex, which never reached the active party.
func (p *pipe) unsend(ex *exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == ex {
		p.pending = nil
	}
}

func (e passiveEnd) Close() error {
	e.p.closeOnce.Do(func() { close(e.p.done) })
	return nil
}

type activeEnd struct{ p *pipe }

func (e activeEnd) Recv(ctx context.Context) (*transport.Forward, error) {
	p := e.p
	for {
		select {
		case <-p.done: // queued messages of a closed pipe are not handed out
			return nil, io.EOF
		default:
		}
		if f := p.nextQueued(); f != nil {
			return f, nil
		}
		select {
		case ex := <-p.fwd:
			p.mu.Lock()
			ex.delivered = true
			p.mu.Unlock()
			return ex.f, nil
		case <-p.queued:
		case <-p.done:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (e activeEnd) Reply(ctx context.Context, b *transport.Backward) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 && p.queue[0].delivered {
		return p.replyQueued(b)
	}
	ex := p.pending
	if ex == nil || !ex.delivered {
		return errors.New("inproc: Reply without an unanswered message")
	}
	if err := checkBackward(ex.f, b); err != nil {
		return err
	}
	select {
	case <-ex.abandoned:
		p.pending = nil
		return fmt.Errorf("inproc: Reply to %s: the passive party stopped waiting for the answer", where(ex.f))
	default:
	}
	ex.answer <- b
	p.pending = nil
	return nil
}

// where names a message in errors.
func where(f *transport.Forward) string {
	return fmt.Sprintf("%v step %d batch %d", f.Phase, f.Step, f.Batch)
}

// checkForward refuses a malformed forward message (see
// transport.PassiveConn).
func checkForward(f *transport.Forward) error {
	if f == nil {
		return errors.New("inproc: nil forward message")
	}
	if f.Phase != transport.Train && f.Phase != transport.Eval {
		return fmt.Errorf("inproc: %s: unknown phase", where(f))
	}
	if f.Step < 0 || f.Epoch < 0 || f.Batch < 0 {
		return fmt.Errorf("inproc: %s epoch %d: step, epoch and batch must be non-negative", where(f), f.Epoch)
	}
	if err := checkMatrix(where(f)+": embedding", f.Embedding); err != nil {
		return err
	}
	if f.Embedding.Rows == 0 || f.Embedding.Cols == 0 {
		return fmt.Errorf("inproc: %s: empty embedding %d×%d", where(f), f.Embedding.Rows, f.Embedding.Cols)
	}
	if len(f.IDs) != f.Embedding.Rows {
		return fmt.Errorf("inproc: %s: %d example IDs for %d embedding rows", where(f), len(f.IDs), f.Embedding.Rows)
	}
	return nil
}

// checkBackward refuses a malformed answer to f (see
// transport.ActiveConn).
func checkBackward(f *transport.Forward, b *transport.Backward) error {
	if b == nil {
		return fmt.Errorf("inproc: Reply to %s: nil answer", where(f))
	}
	if b.Step != f.Step || b.Batch != f.Batch {
		return fmt.Errorf("inproc: Reply for step %d batch %d, the unanswered message is %s", b.Step, b.Batch, where(f))
	}
	if err := transport.CheckVerdict(f, b); err != nil {
		return fmt.Errorf("inproc: %w", err)
	}
	if f.Phase == transport.Eval {
		if b.Grad != nil {
			return fmt.Errorf("inproc: Reply to %s carries a gradient; an evaluation batch is answered without one", where(f))
		}
		return nil
	}
	what := "Reply to " + where(f) + ": gradient"
	if err := checkMatrix(what, b.Grad); err != nil {
		return err
	}
	if !tensor.SameShape(b.Grad, f.Embedding) {
		return fmt.Errorf("inproc: %s shape %d×%d, the embedding was %d×%d", what, b.Grad.Rows, b.Grad.Cols, f.Embedding.Rows, f.Embedding.Cols)
	}
	return nil
}

// checkMatrix refuses a missing or inconsistent matrix; what names it.
// Finiteness is left to the parties (see the package doc).
func checkMatrix(what string, m *tensor.Matrix) error {
	if m == nil {
		return fmt.Errorf("inproc: %s: missing", what)
	}
	if m.Rows < 0 || m.Cols < 0 || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("inproc: %s: %d×%d matrix with %d values", what, m.Rows, m.Cols, len(m.Data))
	}
	return nil
}
