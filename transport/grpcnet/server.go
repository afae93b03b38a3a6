package grpcnet

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/pki"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/tensor"
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
	// Checkpoint is asked to checkpoint after step training steps; an error
	// refuses.
	Checkpoint func(ctx context.Context, step int64) error
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

// ServerOptions configure Listen.
type ServerOptions struct {
	// TLS is the server's mutual-TLS configuration (pki.ServerTLSConfig).
	TLS *tls.Config
	// InsecureLoopback serves plaintext; only loopback addresses are
	// accepted. Exactly one of TLS and InsecureLoopback must be set.
	InsecureLoopback bool
	// Local is the active party's own Hello (its view of the config).
	Local Hello
	// Handlers answer the control calls.
	Handlers Handlers
	// MaxMessageBytes bounds one received or sent message;
	// DefaultMaxMessageBytes when 0.
	MaxMessageBytes int
	// Logger receives refusals and connection events; slog.Default() when
	// nil.
	Logger *slog.Logger
}

// errBeforeHello is the text of the refusal of a call that needs a Hello.
const errBeforeHello = "without the session of a successful Hello"

// ErrServerClosed is returned by Recv after Close.
var ErrServerClosed = errors.New("grpcnet: server closed")

// Server is the active party's end: a gRPC server of SplitLearning and a
// transport.ActiveConn. Create it with Listen.
type Server struct {
	o         ServerOptions
	log       *slog.Logger
	maxValues int
	lis       net.Listener
	grpc      *grpc.Server
	seed      maphash.Seed
	cnt       counters
	sess      sessions
	helloMu   sync.Mutex // serialises Hellos (the session rule, then the handler)
	serveErr  chan error
	closeOnce sync.Once
	closeErr  error

	mu        sync.Mutex
	have      bool // a message has been admitted
	lastKey   key
	lastSum   uint64
	lastRows  int // shape of the last embedding
	lastCols  int
	lastPhase transport.Phase
	lastReply *pb.Backward       // nil while the last message is unanswered
	delivered bool               // the last message was handed out by Recv
	pending   *transport.Forward // the last admitted message; nil after ResetOrder
	ready     chan struct{}      // closed when lastReply is set
	incoming  chan *transport.Forward
	ended     chan struct{} // closed by end
	endErr    error
	endPeer   error // what the passive party is told of endErr

	scoreMu sync.Mutex // serialises Score calls
	score   scoreState
}

var _ transport.ActiveConn = (*Server)(nil)

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

// Listen starts serving on addr ("host:port"; port 0 picks a free port) in
// the background.
func Listen(addr string, o ServerOptions) (*Server, error) {
	creds, err := serverCreds(addr, o)
	if err != nil {
		return nil, err
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Local = o.Local.withDefaults()
	s := &Server{
		o: o, log: o.Logger.With("side", "active"), maxValues: o.MaxMessageBytes / 4,
		seed: maphash.MakeSeed(), serveErr: make(chan error, 1),
		incoming: make(chan *transport.Forward, 1), ended: make(chan struct{}),
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("grpcnet: listen on %s: %w", addr, err)
	}
	if o.InsecureLoopback {
		if err := CheckLoopback(lis.Addr().String()); err != nil {
			lis.Close()
			return nil, err
		}
	}
	s.lis = lis
	if o.TLS != nil {
		creds = credentials.NewTLS(s.loggingTLS(o.TLS))
	}
	s.grpc = grpc.NewServer(
		grpc.Creds(loggingCreds{creds, s}),
		// A connection that does not finish its handshake is dropped
		// after HandshakeTimeout (gRPC's default holds it 120 s).
		grpc.ConnectionTimeout(HandshakeTimeout),
		grpc.MaxRecvMsgSize(o.MaxMessageBytes),
		grpc.MaxSendMsgSize(o.MaxMessageBytes),
		grpc.StatsHandler(&statsHandler{c: &s.cnt, ss: &s.sess}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 15 * time.Second, Timeout: 10 * time.Second}),
	)
	pb.RegisterSplitLearningServer(s.grpc, &service{s: s})
	go func() { s.serveErr <- s.grpc.Serve(lis) }()
	s.log.Info("grpcnet: serving", "addr", lis.Addr().String(), "tls", o.TLS != nil)
	return s, nil
}

// HandshakeTimeout bounds the TLS handshake of a new connection. A
// variable so that tests can shorten it.
var HandshakeTimeout = 10 * time.Second

// loggingCreds logs every refused handshake (no client certificate, an
// old TLS version, a connection that never speaks), which gRPC only
// reports to its own logger.
type loggingCreds struct {
	credentials.TransportCredentials
	s *Server
}

func (c loggingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.s.cnt.rejected.Add(1)
		c.s.log.Warn("grpcnet: refused a connection at the TLS handshake", "remote", conn.RemoteAddr().String(), "err", err)
	}
	return out, info, err
}

func (c loggingCreds) Clone() credentials.TransportCredentials {
	return loggingCreds{c.TransportCredentials.Clone(), c.s}
}

// loggingTLS returns a copy of cfg that logs every refused client with the
// server's logger (gRPC itself only logs handshake failures to grpclog).
func (s *Server) loggingTLS(cfg *tls.Config) *tls.Config {
	c := cfg.Clone()
	verify := cfg.VerifyConnection
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		var err error
		if verify != nil {
			err = verify(cs)
		}
		if err != nil { // counted by loggingCreds
			s.log.Warn("grpcnet: refused a TLS client", "err", err)
		}
		return err
	}
	return c
}

func serverCreds(addr string, o ServerOptions) (credentials.TransportCredentials, error) {
	switch {
	case o.TLS != nil && o.InsecureLoopback:
		return nil, errors.New("grpcnet: server: set either TLS or InsecureLoopback, not both")
	case o.TLS != nil:
		if o.TLS.ClientAuth != tls.RequireAndVerifyClientCert && (o.TLS.ClientAuth != tls.RequireAnyClientCert || o.TLS.VerifyConnection == nil) {
			return nil, errors.New("grpcnet: server: the TLS config must require and verify client certificates (use pki.ServerTLSConfig)")
		}
		return credentials.NewTLS(o.TLS), nil
	case o.InsecureLoopback:
		if err := CheckLoopback(addr); err != nil {
			return nil, err
		}
		return insecure.NewCredentials(), nil
	}
	return nil, errors.New("grpcnet: server: no TLS config (mutual TLS is required; InsecureLoopback is for loopback tests only)")
}

// Addr returns the address the server listens on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Stats returns the server's traffic counters.
func (s *Server) Stats() Stats { return s.cnt.snapshot() }

// Close stops the server: open calls get a little time to finish, then
// the connections are closed. Recv returns ErrServerClosed afterwards
// (unless the run had already ended). Calling Close again returns the
// first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

// Bounds of Close: how long open calls get to finish before the
// connections are cut, and how long Close then waits for the handlers and
// the serving goroutine before it gives up on them. Variables so that tests
// can shorten them.
var (
	closeGrace = 2 * time.Second
	closeWait  = 5 * time.Second
)

// close stops the gRPC server. GracefulStop waits for every handler to
// return, and a handler that ignores its context (a control hook blocked on
// something else) would make it, and with it Close, wait forever; Stop
// cuts the connections but does not wait for handlers. So Close waits a
// bounded time at every stage, logs what it stopped waiting for, and
// returns.
func (s *Server) close() error {
	s.end(ErrServerClosed)
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	var stuck error
	select {
	case <-done:
	case <-time.After(closeGrace):
		s.grpc.Stop()
		select {
		case <-done:
		case <-time.After(closeWait):
			stuck = errors.New("grpcnet: close: a call handler did not return after the server stopped; not waiting for it")
			s.log.Warn(stuck.Error())
		}
	}
	select {
	case err := <-s.serveErr:
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpcnet: serve: %w", err)
		}
	case <-time.After(closeWait):
		err := errors.New("grpcnet: close: the serving goroutine did not return; not waiting for it")
		s.log.Warn(err.Error())
		return err
	}
	return stuck
}

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
	select {
	case <-s.incoming: // an admitted message nobody received: drop it
	default:
	}
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
	m := &pb.Backward{Step: b.Step, Batch: int64(b.Batch)}
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
		g, err := encodeTensor(b.Grad)
		if err != nil {
			return fmt.Errorf("grpcnet: Reply to %v: %w", k, err)
		}
		m.Grad = g
	}
	s.lastReply = m
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
		return nil, statusf(codes.FailedPrecondition, "%v refused: the run has ended (%v)", k, s.endPeer)
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
	case s.have && k.less(s.lastKey):
		last := s.lastKey
		s.mu.Unlock()
		return nil, statusf(codes.FailedPrecondition, "replayed old message %v refused: %v was already received", k, last)
	case s.have && s.lastReply == nil:
		last := s.lastKey
		s.mu.Unlock()
		return nil, statusf(codes.FailedPrecondition, "%v arrived while %v is unanswered (the protocol is lock-step)", k, last)
	default:
		s.have, s.lastKey, s.lastSum, s.lastPhase = true, k, sum, f.Phase
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
		reason := s.endPeer
		s.mu.Unlock()
		return nil, statusf(codes.FailedPrecondition, "%v: the run ended before the answer was ready: %v", k, reason)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReply, nil
}

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
	fp, err := local.Config.toPB()
	if err != nil {
		return nil, toStatus(err, codes.Internal, "hello")
	}
	resp := &pb.HelloResponse{ProtocolVersion: local.Version, Party: local.Party, Config: fp}
	remote := Hello{Version: req.GetProtocolVersion(), Party: req.GetParty(), Config: fingerprintFromPB(req.GetConfig())}
	reason := local.mismatch(remote)
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
		s.log.Warn("grpcnet: refused the run", "peer", peerName(ctx), "party", remote.Party, "reason", reason)
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
	if err := s.o.Handlers.Checkpoint(ctx, req.GetStep()); err != nil {
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
		f, err := decodeForward(m, s.maxValues)
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
	}
}

// statsHandler counts message bytes for Stats and, on the server,
// numbers the connections for the session rules (session.go).
type statsHandler struct {
	c  *counters
	ss *sessions // nil on the client
}

func (h *statsHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h *statsHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	if h.ss == nil {
		return ctx
	}
	return connTracker{h.ss}.tagConn(ctx)
}
func (h *statsHandler) HandleConn(ctx context.Context, st stats.ConnStats) {
	if h.ss != nil {
		connTracker{h.ss}.handleConn(ctx, st)
	}
}
func (h *statsHandler) HandleRPC(_ context.Context, st stats.RPCStats) {
	switch p := st.(type) {
	case *stats.InPayload:
		h.c.bytesRecv.Add(int64(p.WireLength))
		h.c.msgsRecv.Add(1)
	case *stats.OutPayload:
		h.c.bytesSent.Add(int64(p.WireLength))
		h.c.msgsSent.Add(1)
	}
}
