package grpcnet

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// ScoreBatch is one batch of cut-layer embeddings to score
// (transport.ScoreBatch; an alias).
type ScoreBatch = transport.ScoreBatch

// ScoreResult answers a ScoreBatch (transport.ScoreResult; an alias).
type ScoreResult = transport.ScoreResult

// scoreState is the Server's memory of the last Score call of a session,
// so that a re-sent batch is answered again without being scored twice.
type scoreState struct {
	have  bool
	batch int64
	sum   uint64
	reply *pb.ScoreResponse
}

// resetScore forgets the session's Score calls (a new Hello).
func (s *Server) resetScore() {
	s.scoreMu.Lock()
	s.score = scoreState{}
	s.scoreMu.Unlock()
}

func scoreChecksum(seed maphash.Seed, m *pb.ScoreRequest) uint64 {
	f := &pb.Forward{Batch: m.GetBatch(), Last: m.GetLast(), Ids: m.GetIds(), Embedding: m.GetEmbedding()}
	return checksum(seed, f)
}

func (v *service) Score(ctx context.Context, req *pb.ScoreRequest) (*pb.ScoreResponse, error) {
	s := v.s
	who := peerName(ctx)
	refuse := func(code codes.Code, format string, args ...any) error {
		s.cnt.rejected.Add(1)
		err := statusf(code, format, args...)
		s.log.Warn("grpcnet: refused a score request", "peer", who, "err", err)
		return err
	}
	if s.o.Handlers.Score == nil {
		return nil, refuse(codes.FailedPrecondition, "Score refused: this active party is training, not serving")
	}
	if err := s.sess.check(ctx, "Score"); err != nil {
		return nil, s.refuseCall(ctx, err)
	}
	where := fmt.Sprintf("score batch %d", req.GetBatch())
	if req.GetBatch() < 0 || req.GetBatch() > math.MaxInt32 {
		return nil, refuse(codes.InvalidArgument, "%s: batch number out of range", where)
	}
	emb, err := decodeTensor(req.GetEmbedding(), s.maxValues, where+": embedding", wire.F32, wire.None)
	if err != nil {
		return nil, refuse(codes.InvalidArgument, "refused score request: %v", err)
	}
	if emb.Rows == 0 || emb.Cols == 0 {
		return nil, refuse(codes.InvalidArgument, "%s: empty embedding %d×%d", where, emb.Rows, emb.Cols)
	}
	if len(req.GetIds()) != emb.Rows {
		return nil, refuse(codes.InvalidArgument, "%s: %d example IDs for %d embedding rows", where, len(req.GetIds()), emb.Rows)
	}
	sum := scoreChecksum(s.seed, req)

	s.scoreMu.Lock()
	defer s.scoreMu.Unlock()
	st := &s.score
	switch {
	case st.have && req.GetBatch() == st.batch:
		if sum != st.sum {
			return nil, refuse(codes.InvalidArgument, "%s re-sent with different content", where)
		}
		s.cnt.retries.Add(1)
		s.log.Info("grpcnet: answering a re-sent score batch without scoring it again", "batch", st.batch)
		return st.reply, nil
	case st.have && req.GetBatch() < st.batch:
		return nil, refuse(codes.FailedPrecondition, "replayed old %s refused: batch %d was already scored", where, st.batch)
	case !st.have && req.GetBatch() != 0, st.have && req.GetBatch() != st.batch+1:
		next := int64(0)
		if st.have {
			next = st.batch + 1
		}
		return nil, refuse(codes.FailedPrecondition, "%s refused: the next batch is %d", where, next)
	}
	res, err := s.o.Handlers.Score(ctx, &ScoreBatch{Batch: int(req.GetBatch()), Last: req.GetLast(), IDs: req.GetIds(), Embedding: emb})
	if err != nil {
		s.cnt.rejected.Add(1)
		s.log.Warn("grpcnet: score request refused", "peer", who, "batch", req.GetBatch(), "err", err)
		return nil, toStatus(err, codes.InvalidArgument, where)
	}
	if res == nil || res.Batch != int(req.GetBatch()) || res.Scored != emb.Rows || (res.Scores != nil && len(res.Scores) != emb.Rows) {
		return nil, statusf(codes.Internal, "%s: the score handler's answer does not match the request", where)
	}
	reply := &pb.ScoreResponse{Batch: req.GetBatch(), Scored: uint32(res.Scored), Scores: res.Scores}
	s.score = scoreState{have: true, batch: req.GetBatch(), sum: sum, reply: reply}
	s.cnt.exchanges.Add(1)
	return reply, nil
}

// Score sends one batch of embeddings to be scored and checks the answer
// (batch, count, scores in [0, 1] when present). A transient failure is
// retried like Exchange; the active party answers a re-sent batch without
// scoring it twice.
func (c *Client) Score(ctx context.Context, b *ScoreBatch) (*ScoreResult, error) {
	if b == nil || b.Embedding == nil || b.Batch < 0 {
		return nil, fmt.Errorf("grpcnet: score: invalid batch")
	}
	where := fmt.Sprintf("score batch %d", b.Batch)
	if len(b.IDs) != b.Embedding.Rows {
		return nil, fmt.Errorf("grpcnet: %s: %d IDs for %d embedding rows", where, len(b.IDs), b.Embedding.Rows)
	}
	emb, err := encodeTensor(b.Embedding, wire.F32, wire.None)
	if err != nil {
		return nil, fmt.Errorf("grpcnet: %s: %w", where, err)
	}
	req := &pb.ScoreRequest{Batch: int64(b.Batch), Last: b.Last, Ids: b.IDs, Embedding: emb}
	var resp *pb.ScoreResponse
	err = c.retry(ctx, where, func() (err error) {
		cctx, cancel := context.WithTimeout(ctx, c.o.ExchangeTimeout)
		defer cancel()
		resp, err = c.rpc.Score(c.withSession(cctx), req, grpc.WaitForReady(true))
		return err
	}, func(attempt int, err error, delay time.Duration) {
		c.log.Warn("grpcnet: score request failed, re-sending", "batch", b.Batch, "attempt", attempt, "in", delay, "err", err)
	}, nil)
	if err != nil {
		return nil, err
	}
	res, err := checkScore(resp, b)
	if err != nil {
		c.cnt.rejected.Add(1)
		return nil, fmt.Errorf("grpcnet: %s: refused the answer: %w", where, err)
	}
	c.cnt.exchanges.Add(1)
	return res, nil
}

// checkScore validates the active party's answer to b.
func checkScore(m *pb.ScoreResponse, b *ScoreBatch) (*ScoreResult, error) {
	if m.GetBatch() != int64(b.Batch) {
		return nil, fmt.Errorf("answer for batch %d", m.GetBatch())
	}
	n := b.Embedding.Rows
	if int(m.GetScored()) != n {
		return nil, fmt.Errorf("%d rows scored of %d sent", m.GetScored(), n)
	}
	res := &ScoreResult{Batch: b.Batch, Scored: n}
	if sc := m.GetScores(); len(sc) > 0 {
		if len(sc) != n {
			return nil, fmt.Errorf("%d scores for %d rows", len(sc), n)
		}
		for i, p := range sc {
			if !(p >= 0 && p <= 1) {
				return nil, fmt.Errorf("score %v of row %d is not a probability", p, i)
			}
		}
		res.Scores = sc
	}
	return res, nil
}
