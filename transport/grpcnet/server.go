package grpcnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"

	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/transport"
)

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
	// Logger receives refusals and connection events; nil discards them.
	Logger *slog.Logger
	// Timeouts bound the handshake, a closed session's hold and Close
	// (zero fields: the defaults).
	Timeouts Timeouts
	// PipelineDepth > 0 serves a passive party that pipelines that many
	// training messages (transport.Pipeline): the flow-control windows
	// are opened wide enough for them, and the answers of the last
	// PipelineDepth messages are kept, so that a re-sent message already
	// answered gets its answer again (never applied twice).
	PipelineDepth int

	// noHandOff switches the hand-off after each pipelined answer off
	// (handOff; tests).
	noHandOff bool
}

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
	lastLast  bool               // the last message ends an evaluation round
	lastReply *pb.Backward       // nil while the last message is unanswered
	delivered bool               // the last message was handed out by Recv
	pending   *transport.Forward // the last admitted message; nil after ResetOrder
	ready     chan struct{}      // closed when lastReply is set
	recent    []answered         // the last PipelineDepth answers (pipeline.go)
	incoming  chan *transport.Forward
	ended     chan struct{} // closed by end
	endErr    error
	endPeer   error // what the passive party is told of endErr
	// shared: the listener and the gRPC server belong to a Parties (one
	// of several passive parties' Servers); Close ends only this party's
	// run.
	shared bool
	// leaving: the run ended by Leave, to go on in a restarted process;
	// the passive's calls are then answered Unavailable (a new session).
	leaving bool

	scoreMu sync.Mutex // serialises Score calls
	score   scoreState
}

var _ transport.ActiveConn = (*Server)(nil)

// Listen starts serving on addr ("host:port"; port 0 picks a free port) in
// the background.
func Listen(addr string, o ServerOptions) (*Server, error) {
	creds, err := serverCreds(addr, o)
	if err != nil {
		return nil, err
	}
	s := newServer(o)
	lis, err := listenTCP(addr, o.InsecureLoopback)
	if err != nil {
		return nil, err
	}
	s.lis = lis
	if o.TLS != nil {
		creds = credentials.NewTLS(loggingTLS(o.TLS, s.log))
	}
	s.grpc = newGRPCServer(loggingCreds{creds, &s.cnt.rejected, s.log}, s.o.MaxMessageBytes, s.o.Timeouts.Handshake, &statsHandler{c: &s.cnt, ss: &s.sess},
		serverWindowOptions(o.PipelineDepth, o.MaxMessageBytes)...)
	pb.RegisterSplitLearningServer(s.grpc, &service{s: s})
	go func() { s.serveErr <- s.grpc.Serve(lis) }()
	s.log.Info("grpcnet: serving", "addr", lis.Addr().String(), "tls", o.TLS != nil)
	return s, nil
}

// newServer returns a Server of o (defaults filled in) without its
// listener and gRPC server.
func newServer(o ServerOptions) *Server {
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Local = o.Local.WithDefaults()
	o.Timeouts = o.Timeouts.withDefaults()
	return &Server{
		o: o, log: o.Logger.With("side", "active"), maxValues: o.MaxMessageBytes / 4,
		seed: maphash.MakeSeed(), serveErr: make(chan error, 1),
		incoming: make(chan *transport.Forward, 1), ended: make(chan struct{}),
		sess: sessions{idle: o.Timeouts.SessionIdle},
	}
}

// listenTCP listens on addr, a loopback address only when insecure.
func listenTCP(addr string, insecure bool) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("grpcnet: listen on %s: %w", addr, err)
	}
	if insecure {
		if err := CheckLoopback(lis.Addr().String()); err != nil {
			lis.Close()
			return nil, err
		}
	}
	return lis, nil
}

// newGRPCServer returns the gRPC server of the active party, which drops a
// connection that has not finished its handshake after handshake, with
// extra options after its own (a pipeline's flow-control windows).
func newGRPCServer(creds credentials.TransportCredentials, maxMessageBytes int, handshake time.Duration, sh stats.Handler, extra ...grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append([]grpc.ServerOption{
		grpc.Creds(creds),
		grpc.ConnectionTimeout(handshake),
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.MaxSendMsgSize(maxMessageBytes),
		grpc.StatsHandler(sh),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 15 * time.Second, Timeout: 10 * time.Second}),
	}, extra...)...)
}

// loggingCreds logs every refused handshake (no client certificate, an
// old TLS version, a connection that never speaks), which gRPC only
// reports to its own logger.
type loggingCreds struct {
	credentials.TransportCredentials
	rejected *atomic.Int64
	log      *slog.Logger
}

func (c loggingCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.rejected.Add(1)
		c.log.Warn("grpcnet: refused a connection at the TLS handshake", "remote", conn.RemoteAddr().String(), "err", err)
	}
	return out, info, err
}

func (c loggingCreds) Clone() credentials.TransportCredentials {
	return loggingCreds{c.TransportCredentials.Clone(), c.rejected, c.log}
}

// loggingTLS returns a copy of cfg that logs every refused client with the
// server's logger (gRPC itself only logs handshake failures to grpclog).
func loggingTLS(cfg *tls.Config, log *slog.Logger) *tls.Config {
	c := cfg.Clone()
	verify := cfg.VerifyConnection
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		var err error
		if verify != nil {
			err = verify(cs)
		}
		if err != nil { // counted by loggingCreds
			log.Warn("grpcnet: refused a TLS client", "err", err)
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

// close stops the gRPC server. GracefulStop waits for every handler to
// return, and a handler that ignores its context (a control hook blocked on
// something else) would make it, and with it Close, wait forever; Stop
// cuts the connections but does not wait for handlers. So Close waits a
// bounded time at every stage, logs what it stopped waiting for, and
// returns.
func (s *Server) close() error {
	s.end(ErrServerClosed)
	if s.shared {
		return nil // the Parties' Close stops the gRPC server
	}
	return stopGRPC(s.grpc, s.serveErr, s.log, s.o.Timeouts)
}

// stopGRPC stops g, served by a goroutine that reports on serveErr,
// waiting a bounded time at every stage (see close): t.CloseGrace for the
// open calls, t.CloseWait for the handlers and for the serving goroutine.
func stopGRPC(g *grpc.Server, serveErr chan error, log *slog.Logger, t Timeouts) error {
	done := make(chan struct{})
	go func() { g.GracefulStop(); close(done) }()
	var stuck error
	select {
	case <-done:
	case <-time.After(t.CloseGrace):
		g.Stop()
		select {
		case <-done:
		case <-time.After(t.CloseWait):
			stuck = errors.New("grpcnet: close: a call handler did not return after the server stopped; not waiting for it")
			log.Warn(stuck.Error())
		}
	}
	select {
	case err := <-serveErr:
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("grpcnet: serve: %w", err)
		}
	case <-time.After(t.CloseWait):
		err := errors.New("grpcnet: close: the serving goroutine did not return; not waiting for it")
		log.Warn(err.Error())
		return err
	}
	return stuck
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
