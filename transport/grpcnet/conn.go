package grpcnet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
)

// key orders the messages of a run.
type key struct {
	step  int64
	phase transport.Phase
	batch int
}

func (k key) rank() int {
	if k.phase == transport.Eval {
		return 0
	}
	return 1
}

func (k key) less(o key) bool {
	if k.step != o.step {
		return k.step < o.step
	}
	if k.rank() != o.rank() {
		return k.rank() < o.rank()
	}
	return k.batch < o.batch
}

func (k key) String() string { return fmt.Sprintf("%v step %d batch %d", k.phase, k.step, k.batch) }

// Abort ends the run with err: Recv returns err from now on, and the
// message in flight (if any) and every later one are refused. The passive
// party is not told err's text, which may state facts about the labels
// ("test split has a single class"): it gets an incident number, which
// the active party's log shows beside the reason. The server keeps running
// until Close.
func (s *Server) Abort(err error) {
	if err == nil {
		err = errors.New("grpcnet: the active party aborted the run")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	incident := hex.EncodeToString(b[:])
	s.log.Warn("grpcnet: aborting the run", "incident", incident, "err", err)
	s.endWith(err, fmt.Errorf("the active party aborted the run (incident %s; the reason is in its log)", incident))
}

// ResetOrder forgets the last message, so that the next Forward may have
// any key. The active party calls it after it has rolled back to a
// checkpoint both parties hold (a restarted passive resumes at an earlier
// step, which the replay protection would otherwise refuse). It must not be
// called while a message is being processed.
func (s *Server) ResetOrder() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.have, s.lastReply, s.delivered, s.pending = false, nil, false, nil
	s.recent = s.recent[:0]
	select {
	case <-s.incoming: // an admitted message nobody received: drop it
	default:
	}
}

// Leave ends the run in this process only: it is stopping (a signal) and
// a restarted process of the active party will resume it. The passive
// party's open and later calls are answered codes.Unavailable, telling it
// err, so that it starts a new session (NeedsNewSession) instead of
// ending its run. Close the server after it.
func (s *Server) Leave(err error) {
	s.mu.Lock()
	select {
	case <-s.ended:
	default:
		s.leaving = true
	}
	s.mu.Unlock()
	s.endWith(err, fmt.Errorf("the active party is stopping (%v); it resumes the run when restarted", err))
}

// endCode is the status of a call refused because the run ended.
func (s *Server) endCode() codes.Code {
	if s.leaving {
		return codes.Unavailable
	}
	return codes.FailedPrecondition
}

// end marks the run over; the first reason wins.
func (s *Server) end(err error) { s.endWith(err, err) }

// endWith marks the run over with err, telling the passive party peer.
func (s *Server) endWith(err, peer error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.ended:
	default:
		s.endErr, s.endPeer = err, peer
		close(s.ended)
	}
}

// Recv waits for the next forward message. It returns io.EOF once the
// passive party has closed its stream or sent a normal Shutdown, and an
// error naming the reason after an aborting Shutdown.
func (s *Server) Recv(ctx context.Context) (*transport.Forward, error) {
	// deliver hands f out unless ResetOrder dropped it after it was taken
	// from the queue.
	deliver := func(f *transport.Forward) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if f != s.pending {
			return false
		}
		s.delivered = true
		return true
	}
	select {
	case f := <-s.incoming:
		if deliver(f) {
			return f, nil
		}
	default:
	}
	for {
		select {
		case f := <-s.incoming:
			if deliver(f) {
				return f, nil
			}
			continue
		case <-s.ended:
			return nil, s.endErr
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Reply answers the message last received. b must name its step and
// batch; a Train answer carries a finite gradient of the embedding's
// shape, an Eval answer none.
func (s *Server) Reply(ctx context.Context, b *transport.Backward) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.have || s.lastReply != nil || !s.delivered {
		return errors.New("grpcnet: Reply without an unanswered message")
	}
	k := s.lastKey
	if b == nil {
		return fmt.Errorf("grpcnet: Reply to %v: nil answer", k)
	}
	if b.Step != k.step || b.Batch != k.batch {
		return fmt.Errorf("grpcnet: Reply for step %d batch %d, the unanswered message is %v", b.Step, b.Batch, k)
	}
	if err := transport.CheckVerdict(&transport.Forward{Phase: s.lastPhase, Step: k.step, Batch: k.batch, Last: s.lastLast}, b); err != nil {
		return fmt.Errorf("grpcnet: Reply: %w", err)
	}
	m := &pb.Backward{Step: b.Step, Batch: int64(b.Batch), Keep: b.Keep, Stop: b.Stop}
	switch k.phase {
	case transport.Eval:
		if b.Grad != nil {
			return fmt.Errorf("grpcnet: Reply to %v carries a gradient; an evaluation batch is answered without one", k)
		}
	default:
		if b.Grad == nil || b.Grad.Rows != s.lastRows || b.Grad.Cols != s.lastCols {
			return fmt.Errorf("grpcnet: Reply to %v: gradient shape %s, the embedding was %d×%d", k, shapeOf(b.Grad), s.lastRows, s.lastCols)
		}
		if err := tensor.CheckFinite(fmt.Sprintf("grpcnet: Reply to %v: gradient", k), b.Grad); err != nil {
			return err
		}
		g, err := encodeTensor(b.Grad, s.o.Local.Config.Wire.Gradient, s.o.Local.Config.Wire.Compression)
		if err != nil {
			return fmt.Errorf("grpcnet: Reply to %v: %w", k, err)
		}
		m.Grad = g
	}
	s.lastReply = m
	s.remember(k, s.lastSum, m)
	close(s.ready)
	return nil
}

// admit applies the ordering rules of the package doc to an incoming
// message and returns the answer to send.
func (s *Server) admit(ctx context.Context, f *transport.Forward, sum uint64) (*pb.Backward, error) {
	k := key{step: f.Step, phase: f.Phase, batch: f.Batch}
	s.mu.Lock()
	select {
	case <-s.ended:
		s.mu.Unlock()
		return nil, statusf(s.endCode(), "%v refused: the run has ended (%v)", k, s.endPeer)
	default:
	}
	switch {
	case s.have && k == s.lastKey:
		if sum != s.lastSum {
			s.mu.Unlock()
			return nil, statusf(codes.InvalidArgument, "%v re-sent with different content", k)
		}
		s.cnt.retries.Add(1)
		s.log.Info("grpcnet: answering a re-sent message without re-applying it", "msg", k.String())
	case s.have && k.less(s.lastKey) && s.answeredBefore(k, sum) != nil:
		// A pipelined message re-sent after a broken stream, answered
		// already: its answer again, without re-applying it.
		reply := s.answeredBefore(k, sum)
		s.cnt.retries.Add(1)
		s.log.Info("grpcnet: answering a re-sent pipelined message without re-applying it", "msg", k.String())
		s.mu.Unlock()
		return reply, nil
	case s.have && k.less(s.lastKey):
		last := s.lastKey
		s.mu.Unlock()
		return nil, statusf(codes.FailedPrecondition, "replayed old message %v refused: %v was already received", k, last)
	case s.have && s.lastReply == nil:
		last := s.lastKey
		s.mu.Unlock()
		return nil, statusf(codes.FailedPrecondition, "%v arrived while %v is unanswered (the protocol is lock-step)", k, last)
	default:
		s.have, s.lastKey, s.lastSum, s.lastPhase, s.lastLast = true, k, sum, f.Phase, f.Last
		s.lastRows, s.lastCols = f.Embedding.Rows, f.Embedding.Cols
		s.lastReply, s.ready, s.delivered, s.pending = nil, make(chan struct{}), false, f
		select {
		case s.incoming <- f: // the previous message was received and answered
		default:
			s.mu.Unlock()
			return nil, statusf(codes.Internal, "%v refused: an earlier message is still queued", k)
		}
	}
	ready := s.ready
	s.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, statusf(codes.Canceled, "%v: stream ended before the answer was ready", k)
	case <-s.ended:
		s.mu.Lock()
		reason, code := s.endPeer, s.endCode()
		s.mu.Unlock()
		return nil, statusf(code, "%v: the run ended before the answer was ready: %v", k, reason)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReply, nil
}
