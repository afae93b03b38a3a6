package grpcnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"

	"github.com/splitguard/splitguard/pki"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
)

// # Several passive parties
//
// ListenParties serves K passive parties on one address: one listener,
// one gRPC server, and one Server per passive (a transport.ActiveConn with
// its own session, Train stream, ordering state, handlers and counters,
// exactly as a Server of Listen). Every call is routed to the Server of
// the passive that makes it:
//
//   - with mutual TLS, by the client certificate: it must carry exactly
//     one of the expected passives' names (pki.ServerTLSConfigFor refuses
//     any other at the handshake), and that name picks the Server — a
//     passive can only ever reach its own session;
//   - without TLS (InsecureLoopback, tests on one machine), a Hello by the
//     party name it announces, and every later call by its session token.
//
// The session rules (session.go) hold per passive: a second Hello of the
// same passive is refused while its session is live; other passives'
// sessions are not affected. The passive side is an ordinary Client: it
// needs only its own certificate (its name).

// PartyOptions configure one passive party of ListenParties.
type PartyOptions struct {
	// Name is the passive's party name: with TLS its certificate must
	// carry it, without TLS its Hello must announce it.
	Name string
	// Handlers answer this passive's control calls (see Handlers).
	Handlers Handlers
	// Local, when set, is the active party's Hello to this passive in
	// place of PartiesOptions.Local: its own fingerprint, e.g. its own
	// cut width when the embeddings are concatenated.
	Local *Hello
}

// PartiesOptions configure ListenParties.
type PartiesOptions struct {
	// TLS is the server's mutual-TLS configuration, one that accepts
	// every expected passive's certificate (pki.ServerTLSConfigFor).
	TLS *tls.Config
	// InsecureLoopback serves plaintext on a loopback address only.
	// Exactly one of TLS and InsecureLoopback must be set.
	InsecureLoopback bool
	// Local is the active party's own Hello, the same to every passive.
	Local Hello
	// Passives are the expected passive parties, in the order of Conn.
	Passives []PartyOptions
	// MaxMessageBytes bounds one message (DefaultMaxMessageBytes when 0).
	MaxMessageBytes int
	// Logger receives refusals and connection events; nil discards them.
	Logger *slog.Logger
	// Timeouts bound the handshake, a closed session's hold and Close
	// (zero fields: the defaults).
	Timeouts Timeouts
}

// Parties is the active party's end with several passive parties: one
// listener and one Server per passive. Create it with ListenParties.
type Parties struct {
	names    []string
	servers  []*Server
	tls      bool
	log      *slog.Logger
	lis      net.Listener
	grpc     *grpc.Server
	cnt      counters // what no passive's Server was charged with
	nextConn atomic.Uint64
	serveErr chan error

	closeOnce sync.Once
	closeErr  error
}

// ListenParties starts serving the passives of o on addr ("host:port";
// port 0 picks a free port) in the background.
func ListenParties(addr string, o PartiesOptions) (*Parties, error) {
	if len(o.Passives) == 0 {
		return nil, errors.New("grpcnet: parties: no passive party expected")
	}
	names := make([]string, len(o.Passives))
	for i, po := range o.Passives {
		if po.Name == "" {
			return nil, fmt.Errorf("grpcnet: parties: passive %d has no name", i)
		}
		if j := slices.Index(names[:i], po.Name); j >= 0 {
			return nil, fmt.Errorf("grpcnet: parties: passives %d and %d are both named %q", j, i, po.Name)
		}
		names[i] = po.Name
	}
	so := ServerOptions{TLS: o.TLS, InsecureLoopback: o.InsecureLoopback, Local: o.Local, MaxMessageBytes: o.MaxMessageBytes, Logger: o.Logger,
		Timeouts: o.Timeouts}
	creds, err := serverCreds(addr, so)
	if err != nil {
		return nil, err
	}
	p := &Parties{names: names, tls: o.TLS != nil, serveErr: make(chan error, 1)}
	for _, po := range o.Passives {
		so.Handlers, so.Local = po.Handlers, o.Local
		if po.Local != nil {
			so.Local = *po.Local
		}
		s := newServer(so)
		s.log = s.log.With("passive", po.Name)
		s.shared = true
		p.servers = append(p.servers, s)
	}
	first := p.servers[0]
	p.log = first.o.Logger.With("side", "active")
	lis, err := listenTCP(addr, o.InsecureLoopback)
	if err != nil {
		return nil, err
	}
	p.lis = lis
	for _, s := range p.servers {
		s.lis = lis
	}
	if o.TLS != nil {
		creds = credentials.NewTLS(loggingTLS(o.TLS, p.log))
	}
	p.grpc = newGRPCServer(loggingCreds{creds, &p.cnt.rejected, p.log}, first.o.MaxMessageBytes, first.o.Timeouts.Handshake, &partiesStats{p})
	for _, s := range p.servers {
		s.grpc = p.grpc
	}
	pb.RegisterSplitLearningServer(p.grpc, &router{p: p})
	go func() { p.serveErr <- p.grpc.Serve(lis) }()
	p.log.Info("grpcnet: serving passive parties", "addr", lis.Addr().String(), "tls", o.TLS != nil, "passives", strings.Join(names, ","))
	return p, nil
}

// Passives is the number of passive parties.
func (p *Parties) Passives() int { return len(p.servers) }

// Name is the name of passive k.
func (p *Parties) Name(k int) string { return p.names[k] }

// Conn is the Server of passive k (0 ≤ k < Passives): the active party's
// transport.ActiveConn with that passive. Its Close ends that passive's
// run only; Parties.Close stops serving all.
func (p *Parties) Conn(k int) *Server { return p.servers[k] }

// Addr returns the address the passives dial.
func (p *Parties) Addr() string { return p.lis.Addr().String() }

// Stats returns the traffic counters of what could not be charged to one
// passive (refused handshakes, calls from no known session); each
// passive's are its Conn's Stats.
func (p *Parties) Stats() Stats { return p.cnt.snapshot() }

// Close ends every passive's run (their Recv return ErrServerClosed) and
// stops the server, within the bounds of Server.Close.
func (p *Parties) Close() error {
	p.closeOnce.Do(func() {
		for _, s := range p.servers {
			_ = s.Close()
		}
		p.closeErr = stopGRPC(p.grpc, p.serveErr, p.log, p.servers[0].o.Timeouts)
	})
	return p.closeErr
}

// route returns the Server of the passive that makes the call on ctx;
// hello is the party a Hello announces ("" for other calls), what names
// the call in refusals.
func (p *Parties) route(ctx context.Context, hello, what string) (*Server, error) {
	k, err := p.index(ctx, hello)
	if err != nil {
		p.cnt.rejected.Add(1)
		p.log.Warn("grpcnet: refused a call of no expected passive party", "call", what, "peer", peerName(ctx), "err", err)
		return nil, err
	}
	return p.servers[k], nil
}

// index is route's choice: the passive's number.
func (p *Parties) index(ctx context.Context, hello string) (int, error) {
	if p.tls {
		pr, ok := peer.FromContext(ctx)
		if !ok {
			return -1, statusf(codes.PermissionDenied, "no peer information")
		}
		ti, ok := pr.AuthInfo.(credentials.TLSInfo)
		if !ok || len(ti.State.PeerCertificates) == 0 {
			return -1, statusf(codes.PermissionDenied, "no client certificate")
		}
		k, err := pki.MatchName(ti.State.PeerCertificates[0], p.names)
		if err != nil {
			return -1, statusf(codes.PermissionDenied, "%v", err)
		}
		return k, nil
	}
	if hello != "" {
		if k := slices.Index(p.names, hello); k >= 0 {
			return k, nil
		}
		return -1, statusf(codes.PermissionDenied, "Hello refused: no passive party named %q is expected (expected: %s)", hello, strings.Join(p.names, ", "))
	}
	tok := incomingToken(ctx)
	for k, s := range p.servers {
		if s.sess.holds(tok) {
			return k, nil
		}
	}
	return -1, statusf(codes.FailedPrecondition, "refused: a call %s", errBeforeHello)
}

// router is the gRPC service of Parties: each call goes to the service
// of its passive's Server.
type router struct {
	pb.UnimplementedSplitLearningServer
	p *Parties
}

func (r *router) Hello(ctx context.Context, req *pb.HelloRequest) (*pb.HelloResponse, error) {
	party := req.GetParty()
	if party == "" {
		party = "(none)"
	}
	s, err := r.p.route(ctx, party, "Hello")
	if err != nil {
		return nil, err
	}
	if r.p.tls && req.GetParty() != "" && peerName(ctx) != req.GetParty() {
		// The certificate decides; a different announced name is worth
		// an operator's look (a copied config, a misnamed party).
		s.log.Warn("grpcnet: a passive's Hello announces another name than its certificate's", "certificate", peerName(ctx), "announced", req.GetParty())
	}
	return (&service{s: s}).Hello(ctx, req)
}

func (r *router) PSI(ctx context.Context, req *pb.PSIRequest) (*pb.PSIResponse, error) {
	s, err := r.p.route(ctx, "", "PSI")
	if err != nil {
		return nil, err
	}
	return (&service{s: s}).PSI(ctx, req)
}

func (r *router) Checkpoint(ctx context.Context, req *pb.CheckpointRequest) (*pb.CheckpointResponse, error) {
	s, err := r.p.route(ctx, "", "Checkpoint")
	if err != nil {
		return nil, err
	}
	return (&service{s: s}).Checkpoint(ctx, req)
}

func (r *router) Shutdown(ctx context.Context, req *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	s, err := r.p.route(ctx, "", "Shutdown")
	if err != nil {
		return nil, err
	}
	return (&service{s: s}).Shutdown(ctx, req)
}

func (r *router) Score(ctx context.Context, req *pb.ScoreRequest) (*pb.ScoreResponse, error) {
	s, err := r.p.route(ctx, "", "Score")
	if err != nil {
		return nil, err
	}
	return (&service{s: s}).Score(ctx, req)
}

func (r *router) Train(stream pb.SplitLearning_TrainServer) error {
	s, err := r.p.route(stream.Context(), "", "Train")
	if err != nil {
		return err
	}
	return (&service{s: s}).Train(stream)
}

// partiesStats numbers the connections for every passive's session rules
// and charges message bytes to the passive that sent or received them.
type partiesStats struct{ p *Parties }

func (h *partiesStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (h *partiesStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	id := h.p.nextConn.Add(1)
	for _, s := range h.p.servers {
		s.sess.markOpen(id)
	}
	return context.WithValue(ctx, connKey{}, id)
}

func (h *partiesStats) HandleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		if id := connID(ctx); id != 0 {
			for _, s := range h.p.servers {
				s.sess.connClosed(id)
			}
		}
	}
}

func (h *partiesStats) HandleRPC(ctx context.Context, st stats.RPCStats) {
	c := &h.p.cnt
	if k, err := h.p.index(ctx, ""); err == nil {
		c = &h.p.servers[k].cnt
	}
	(&statsHandler{c: c}).HandleRPC(ctx, st)
}
