package grpcnet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// The pipelined Train stream (transport.Pipeline). The passive party
// writes up to PipelineDepth training messages on its stream before it
// reads the first answer; the active party's server reads them one at a
// time and answers each in order, exactly as in lock-step, so its
// ordering and replay rules are unchanged. What is new is recovery: when
// the stream breaks, the client opens a new one and re-sends every
// message still unanswered, in order. The server answers the ones it had
// already answered from its window of the last PipelineDepth answers
// (matched by key and content), without applying them again, and admits
// the rest as new.
//
// Flow control: a server busy with message t reads message t+1 only
// after answering t, and a client busy sending t+1 reads the answer to t
// only afterwards; with gRPC's default stream windows (64 KiB to start)
// the two could wait on each other. PipelineDepth opens both windows to
// (PipelineDepth+1) messages of MaxMessageBytes (at most 1 GiB).

var _ transport.Pipeline = (*Client)(nil)

// piped is one pipelined message in flight: its encoding, for re-sends,
// and its header, to check the answer.
type piped struct {
	m    *pb.Forward
	head transport.Forward // phase, step, batch and the embedding's shape
	dims tensor.Matrix     // the embedding's shape (no data), head.Embedding
}

// answered is one of the server's last answers.
type answered struct {
	k     key
	sum   uint64
	reply *pb.Backward
}

// window is the flow-control window for a pipeline of depth messages
// of at most maxBytes each; 0 when depth is 0 (gRPC's defaults).
func window(depth, maxBytes int) int32 {
	if depth <= 0 {
		return 0
	}
	return int32(min(int64(depth+1)*int64(maxBytes), 1<<30))
}

// windowOptions are the client's dial options for a pipeline depth.
func windowOptions(depth, maxBytes int) []grpc.DialOption {
	w := window(depth, maxBytes)
	if w == 0 {
		return nil
	}
	return []grpc.DialOption{grpc.WithInitialWindowSize(w), grpc.WithInitialConnWindowSize(w)}
}

// serverWindowOptions are the server's options for a pipeline depth.
func serverWindowOptions(depth, maxBytes int) []grpc.ServerOption {
	w := window(depth, maxBytes)
	if w == 0 {
		return nil
	}
	return []grpc.ServerOption{grpc.InitialWindowSize(w), grpc.InitialConnWindowSize(w)}
}

// Send writes a training message on the Train stream without waiting for
// its answer (transport.Pipeline). A failure to write is not returned:
// the message stays in flight and Receive re-sends it on a new stream.
func (c *Client) Send(ctx context.Context, f *transport.Forward) error {
	defer handOff(c.o.noHandOff)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClientClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if f == nil {
		return errors.New("grpcnet: nil forward message")
	}
	where := fmt.Sprintf("%v step %d batch %d", f.Phase, f.Step, f.Batch)
	switch n := len(c.inflight); {
	case f.Phase != transport.Train:
		return fmt.Errorf("grpcnet: %s refused: only training messages are pipelined", where)
	case n >= c.o.PipelineDepth:
		return fmt.Errorf("grpcnet: %s refused: %d messages in flight, the pipeline depth is %d", where, n, c.o.PipelineDepth)
	case n > 0 && !transport.Precedes(&c.inflight[n-1].head, f):
		h := c.inflight[n-1].head
		return fmt.Errorf("grpcnet: %s refused: it does not come after %v step %d batch %d, in flight", where, h.Phase, h.Step, h.Batch)
	}
	m, err := encodeForward(f, c.wire.Embedding, c.wire.Compression)
	if err != nil {
		return err
	}
	c.inflight = append(c.inflight, piped{m: m, head: transport.Forward{Phase: f.Phase, Step: f.Step, Batch: f.Batch}})
	p := &c.inflight[len(c.inflight)-1]
	p.dims = tensor.Matrix{Rows: f.Embedding.Rows, Cols: f.Embedding.Cols}
	if _, err := c.onStream(ctx, c.sendInflight(len(c.inflight)-1), false); err != nil {
		if ctx.Err() != nil {
			c.inflight = c.inflight[:len(c.inflight)-1]
			return fmt.Errorf("grpcnet: %s: %w", where, ctx.Err())
		}
		c.log.Warn("grpcnet: pipelined send failed; re-sending on the next receive", "msg", where, "err", err)
	}
	return nil
}

// sendInflight returns the send of onStream: on a fresh stream every
// message in flight, else those from index from on.
func (c *Client) sendInflight(from int) func(fresh bool) error {
	return func(fresh bool) error {
		if fresh {
			from = 0
		}
		for _, p := range c.inflight[from:] {
			if err := c.stream.Send(p.m); err != nil {
				return err
			}
		}
		return nil
	}
}

// Receive waits for the answer to the oldest message in flight
// (transport.Pipeline), re-sending every message in flight on a new
// stream after a transient failure, as Exchange retries.
func (c *Client) Receive(ctx context.Context) (*transport.Backward, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClientClosed
	}
	if len(c.inflight) == 0 {
		return nil, errors.New("grpcnet: Receive with no message in flight")
	}
	p := &c.inflight[0]
	head := p.head
	head.Embedding = &p.dims
	where := fmt.Sprintf("%v step %d batch %d", head.Phase, head.Step, head.Batch)
	var reply *pb.Backward
	err := c.retry(ctx, where, func() (err error) {
		// A stream still open has every message in flight on it already.
		reply, err = c.onStream(ctx, c.sendInflight(len(c.inflight)), true)
		return err
	}, func(attempt int, err error, delay time.Duration) {
		c.log.Warn("grpcnet: pipelined exchange failed, re-sending the messages in flight", "msg", where, "in_flight", len(c.inflight), "attempt", attempt, "in", delay, "err", err)
	}, func(attempts int, err error) {
		c.log.Warn("grpcnet: pipelined exchange failed", "msg", where, "attempts", attempts, "err", err)
	})
	if err != nil {
		if ctx.Err() != nil {
			// Abandoned: their answers never reach a later Receive.
			c.inflight = c.inflight[:0]
			c.dropStream()
		}
		return nil, err
	}
	b, err := decodeBackward(reply, &head, c.max, c.wire.Gradient, c.wire.Compression)
	if err != nil {
		c.cnt.rejected.Add(1)
		c.log.Warn("grpcnet: refused the active party's answer", "msg", where, "err", err)
		return nil, fmt.Errorf("grpcnet: %s: refused the answer: %w", where, err)
	}
	c.inflight = c.inflight[1:]
	c.cnt.exchanges.Add(1)
	return b, nil
}

// InFlight is the number of pipelined messages sent and not yet
// received.
func (c *Client) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight)
}

// remember keeps the answer to the message of key k and content sum in
// the window of the last PipelineDepth answers; s.mu is held.
func (s *Server) remember(k key, sum uint64, reply *pb.Backward) {
	d := s.o.PipelineDepth
	if d <= 0 {
		return
	}
	if len(s.recent) >= d {
		copy(s.recent, s.recent[1:])
		s.recent = s.recent[:d-1]
	}
	s.recent = append(s.recent, answered{k: k, sum: sum, reply: reply})
}

// answeredBefore returns the remembered answer to the message of key k
// and content sum, or nil; s.mu is held.
func (s *Server) answeredBefore(k key, sum uint64) *pb.Backward {
	for _, a := range s.recent {
		if a.k == k && a.sum == sum {
			return a.reply
		}
	}
	return nil
}
