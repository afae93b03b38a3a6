package grpcnet

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/pki"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/transport"
)

// Handlers are the active party's answers to the control calls. A nil
// handler makes its call fail with codes.Unimplemented, except Hello
// (version and fingerprint are always checked; a nil Hello accepts any
// peer that matches them) and Shutdown (a nil Shutdown only ends the run).
type Handlers struct {
	// Hello may refuse a peer whose version and fingerprint matched, e.g. by
	// party name; its error message is sent back as the reason.
	Hello func(ctx context.Context, peer Hello) error
	// PSI answers one PSI round; (*psi.Responder).Handle fits after
	// wrapping.
	PSI func(ctx context.Context, req *psi.Request) (*psi.Response, error)
	// Checkpoint is asked to checkpoint after step training steps, or to
	// resume from step; an error refuses. holds is what the passive sent
	// with a resume below its newest checkpoint: the steps of the
	// checkpoints it holds intact (at most MaxHolds, each ≥ 0, ascending,
	// no repeats; nil otherwise).
	Checkpoint func(ctx context.Context, step int64, holds []int64) error
	// Shutdown is told that the passive ends the run; reason is empty for a
	// normal end.
	Shutdown func(ctx context.Context, reason string) error
	// Score, when set, makes the server an inference server: it answers
	// Score calls (each batch handed to Score once, in order; a re-sent
	// batch gets the remembered answer) and refuses Train streams. When
	// nil, Score calls are refused. The result's Scores must be nil unless
	// the active party shares its scores.
	Score func(ctx context.Context, b *ScoreBatch) (*ScoreResult, error)
}

// MaxHolds is the most held checkpoints a Checkpoint call may list
// (transport.MaxHolds).
const MaxHolds = transport.MaxHolds

// errBeforeHello is the text of the refusal of a call that needs a Hello.
const errBeforeHello = "without the session of a successful Hello"

// service implements the generated server interface.
type service struct {
	pb.UnimplementedSplitLearningServer
	s *Server
}

// refuseCall counts and logs a call refused by the session rules.
func (s *Server) refuseCall(ctx context.Context, err error) error {
	s.cnt.rejected.Add(1)
	s.log.Warn("grpcnet: refused a call outside the session", "peer", peerName(ctx), "err", err)
	return err
}

// peerName names the caller in logs: its certificate's party name, or its
// address.
func peerName(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "unknown"
	}
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok {
		if n := pki.PeerName(ti.State); n != "" {
			return n
		}
	}
	return p.Addr.String()
}

func (v *service) Hello(ctx context.Context, req *pb.HelloRequest) (*pb.HelloResponse, error) {
	s := v.s
	local := s.o.Local
	fp, err := fingerprintToPB(local.Config)
	if err != nil {
		return nil, toStatus(err, codes.Internal, "hello")
	}
	resp := &pb.HelloResponse{ProtocolVersion: local.Version, Party: local.Party, Config: fp, IdFormat: local.IDFormat}
	remote := Hello{Version: req.GetProtocolVersion(), Party: req.GetParty(), Config: fingerprintFromPB(req.GetConfig()), IDFormat: req.GetIdFormat()}
	reason := local.Mismatch(remote)
	s.helloMu.Lock()
	defer s.helloMu.Unlock()
	if reason == "" {
		if err := s.sess.admit(ctx); err != nil {
			// Aborted: the caller may try again once that session is gone.
			s.cnt.rejected.Add(1)
			s.log.Warn("grpcnet: refused a Hello", "peer", peerName(ctx), "party", remote.Party, "err", err)
			return nil, statusf(codes.Aborted, "Hello refused: %v", err)
		}
	}
	if reason == "" && s.o.Handlers.Hello != nil {
		if err := s.o.Handlers.Hello(ctx, remote); err != nil {
			reason = err.Error()
		}
	}
	if reason != "" {
		resp.Reason = reason
		args := []any{"peer", peerName(ctx), "party", remote.Party, "reason", reason}
		for _, k := range local.MismatchKeys(remote) {
			args = append(args, "key", k) // the keys the reason names
		}
		s.log.Warn("grpcnet: refused the run", args...)
		return resp, nil
	}
	tok, err := s.sess.begin(ctx, peerName(ctx))
	if err != nil {
		return nil, toStatus(err, codes.Internal, "hello")
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs(SessionHeader, tok)); err != nil {
		return nil, toStatus(err, codes.Internal, "hello")
	}
	resp.Accepted = true
	s.resetScore()
	s.log.Info("grpcnet: hello", "peer", peerName(ctx), "party", remote.Party)
	return resp, nil
}

func (v *service) PSI(ctx context.Context, req *pb.PSIRequest) (*pb.PSIResponse, error) {
	s := v.s
	if err := s.sess.check(ctx, "PSI"); err != nil {
		return nil, s.refuseCall(ctx, err)
	}
	if s.o.Handlers.PSI == nil {
		return nil, statusf(codes.Unimplemented, "this active party does not run PSI")
	}
	resp, err := s.o.Handlers.PSI(ctx, &psi.Request{Round: int(req.GetRound()), Elements: req.GetElements(), Digest: req.GetDigest()})
	if err != nil {
		s.cnt.rejected.Add(1)
		s.log.Warn("grpcnet: PSI round failed", "peer", peerName(ctx), "round", req.GetRound(), "err", err)
		return nil, toStatus(err, codes.InvalidArgument, fmt.Sprintf("PSI round %d", req.GetRound()))
	}
	return &pb.PSIResponse{Round: uint32(resp.Round), Elements: resp.Elements, Own: resp.Own, Digest: resp.Digest}, nil
}

func (v *service) Checkpoint(ctx context.Context, req *pb.CheckpointRequest) (*pb.CheckpointResponse, error) {
	s := v.s
	if err := s.sess.check(ctx, "Checkpoint"); err != nil {
		return nil, s.refuseCall(ctx, err)
	}
	if s.o.Handlers.Checkpoint == nil {
		return nil, statusf(codes.Unimplemented, "this active party does not checkpoint")
	}
	if req.GetStep() < 0 {
		return nil, statusf(codes.InvalidArgument, "checkpoint at negative step %d", req.GetStep())
	}
	holds := req.GetHolds()
	if len(holds) > MaxHolds {
		return nil, statusf(codes.InvalidArgument, "checkpoint at step %d: %d held checkpoints listed, at most %d", req.GetStep(), len(holds), MaxHolds)
	}
	for i, h := range holds {
		if h < 0 || (i > 0 && h <= holds[i-1]) {
			return nil, statusf(codes.InvalidArgument, "checkpoint at step %d: the held checkpoints %v are not distinct steps ≥ 0 in ascending order", req.GetStep(), holds)
		}
	}
	if err := s.o.Handlers.Checkpoint(ctx, req.GetStep(), holds); err != nil {
		s.log.Warn("grpcnet: checkpoint refused", "peer", peerName(ctx), "step", req.GetStep(), "err", err)
		return nil, toStatus(err, codes.FailedPrecondition, fmt.Sprintf("checkpoint at step %d", req.GetStep()))
	}
	return &pb.CheckpointResponse{Step: req.GetStep()}, nil
}

func (v *service) Shutdown(ctx context.Context, req *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	s := v.s
	if err := s.sess.check(ctx, "Shutdown"); err != nil {
		return nil, s.refuseCall(ctx, err)
	}
	defer s.sess.end(ctx)
	reason := req.GetReason()
	s.log.Info("grpcnet: shutdown requested", "peer", peerName(ctx), "reason", reason)
	var herr error
	if s.o.Handlers.Shutdown != nil {
		herr = s.o.Handlers.Shutdown(ctx, reason)
	}
	if reason == "" {
		s.end(io.EOF)
	} else {
		s.end(fmt.Errorf("grpcnet: the passive party aborted the run: %s", reason))
	}
	if herr != nil {
		return nil, toStatus(herr, codes.Internal, "shutdown")
	}
	return &pb.ShutdownResponse{}, nil
}

func (v *service) Train(stream pb.SplitLearning_TrainServer) error {
	s := v.s
	ctx := stream.Context()
	who := peerName(ctx)
	if s.o.Handlers.Score != nil {
		s.cnt.rejected.Add(1)
		return statusf(codes.FailedPrecondition, "Train refused: this active party serves scoring, not training")
	}
	if err := s.sess.check(ctx, "Train"); err != nil {
		return s.refuseCall(ctx, err)
	}
	s.log.Debug("grpcnet: train stream opened", "peer", who)
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			s.log.Info("grpcnet: the passive party closed the train stream", "peer", who)
			s.end(io.EOF)
			return nil
		}
		if err != nil {
			// A broken connection: the passive may reconnect and re-send.
			s.log.Info("grpcnet: train stream broken", "peer", who, "err", err)
			return err
		}
		if err := s.sess.check(ctx, "Train"); err != nil {
			return s.refuseCall(ctx, err)
		}
		f, err := decodeForward(m, s.maxValues, s.o.Local.Config.Wire.Embedding, s.o.Local.Config.Wire.Compression)
		if err != nil {
			s.cnt.rejected.Add(1)
			s.log.Warn("grpcnet: refused a forward message", "peer", who, "err", err)
			return statusf(codes.InvalidArgument, "refused forward message: %v", err)
		}
		reply, err := s.admit(ctx, f, checksum(s.seed, m))
		if status.Code(err) == codes.Canceled {
			s.log.Info("grpcnet: train stream ended while a step was in flight", "peer", who, "err", err)
			return err
		}
		if err != nil {
			s.cnt.rejected.Add(1)
			s.log.Warn("grpcnet: refused a forward message", "peer", who, "err", err)
			return err
		}
		if err := stream.Send(reply); err != nil {
			s.log.Info("grpcnet: train stream broken while answering", "peer", who, "err", err)
			return err
		}
		s.cnt.exchanges.Add(1)
		if s.o.PipelineDepth > 0 {
			handOff(s.o.noHandOff)
		}
	}
}
