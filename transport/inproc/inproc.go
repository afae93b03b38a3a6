// Package inproc connects the two parties inside one process through Go
// channels. Messages are passed by pointer: a sender must not modify a
// message's matrices until the matching answer has arrived, which the
// lock-step protocol guarantees.
package inproc

import (
	"context"
	"errors"
	"io"

	"github.com/splitguard/splitguard/transport"
)

// Pipe returns the two connected ends of an in-process connection.
func Pipe() (transport.PassiveConn, transport.ActiveConn) {
	p := &pipe{fwd: make(chan *transport.Forward), bwd: make(chan *transport.Backward), done: make(chan struct{})}
	return passiveEnd{p}, activeEnd{p}
}

type pipe struct {
	fwd  chan *transport.Forward
	bwd  chan *transport.Backward
	done chan struct{} // closed by the passive's Close
}

type passiveEnd struct{ p *pipe }

// ErrClosed is returned by Exchange after Close.
var ErrClosed = errors.New("inproc: connection closed")

func (e passiveEnd) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	select {
	case <-e.p.done:
		return nil, ErrClosed
	default:
	}
	select {
	case e.p.fwd <- f:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case b, ok := <-e.p.bwd:
		if !ok {
			return nil, errors.New("inproc: the active party stopped before answering")
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e passiveEnd) Close() error {
	select {
	case <-e.p.done:
	default:
		close(e.p.done)
	}
	return nil
}

type activeEnd struct{ p *pipe }

func (e activeEnd) Recv(ctx context.Context) (*transport.Forward, error) {
	select {
	case f := <-e.p.fwd:
		return f, nil
	case <-e.p.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e activeEnd) Reply(ctx context.Context, b *transport.Backward) error {
	select {
	case e.p.bwd <- b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
