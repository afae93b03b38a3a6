package grpcnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/splitguard/splitguard/configkey"
	pb "github.com/splitguard/splitguard/proto/splitguardpb"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// ClientOptions configure Dial. Zero durations and counts take the
// defaults given.
type ClientOptions struct {
	// TLS is the client's mutual-TLS configuration (pki.ClientTLSConfig).
	TLS *tls.Config
	// InsecureLoopback dials in plaintext; only loopback addresses are
	// accepted. Exactly one of TLS and InsecureLoopback must be set.
	InsecureLoopback bool
	// MaxMessageBytes bounds one sent or received message;
	// DefaultMaxMessageBytes when 0.
	MaxMessageBytes int
	// ExchangeTimeout bounds one attempt of one Forward/Backward exchange
	// (default 2 minutes).
	ExchangeTimeout time.Duration
	// CallTimeout bounds each control call (default 10 minutes: a PSI
	// round over millions of IDs takes minutes).
	CallTimeout time.Duration
	// ConnectTimeout bounds how long Hello waits for an active party that
	// does not answer at all (a closed port, an unreachable host); 0 means
	// CallTimeout.
	ConnectTimeout time.Duration
	// MaxRetries is how often one exchange is re-sent after a transient
	// failure (default 6; negative: never).
	MaxRetries int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// attempts: BackoffBase·2^attempt, capped at BackoffMax (defaults
	// 100 ms and 10 s).
	BackoffBase, BackoffMax time.Duration
	// Logger receives retries and refusals; nil discards them.
	Logger *slog.Logger
	// PipelineDepth > 0 lets Send have that many training messages in
	// flight (a staleness k needs k+1; at most transport.MaxInFlight),
	// and opens the flow-control windows wide enough for them; 0 refuses
	// Send.
	PipelineDepth int

	// dialer, where set (tests), opens the client's connections in place
	// of gRPC's own dialer.
	dialer func(ctx context.Context, addr string) (net.Conn, error)
	// noHandOff switches the pipelined Send's hand-off off (handOff).
	noHandOff bool
}

// dialerOptions are the dial options that make gRPC open connections
// with d (none where d is nil).
func dialerOptions(d func(ctx context.Context, addr string) (net.Conn, error)) []grpc.DialOption {
	if d == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithContextDialer(d)}
}

// ErrClientClosed is returned by calls after Close.
var ErrClientClosed = errors.New("grpcnet: client closed")

// Client is the passive party's end: a gRPC client of the active party's
// SplitLearning service and a transport.PassiveConn. Create it with Dial.
type Client struct {
	o    ClientOptions
	log  *slog.Logger
	conn *grpc.ClientConn
	rpc  pb.SplitLearningClient
	cnt  counters
	max  int
	addr string
	// tlsErr is the last refusal of the active party's certificate by
	// this client's TLS verification (an error, or nil).
	tlsErr atomic.Pointer[error]

	// session is the token of the session the last successful Hello
	// opened (a string; empty before).
	session atomic.Value

	mu     sync.Mutex // serialises Exchange and Close (lock-step)
	closed bool
	// wire are the encodings the last successful Hello agreed on.
	wire   wire.Encodings
	stream pb.SplitLearning_TrainClient
	cancel context.CancelFunc // cancels stream
	// inflight are the pipelined messages sent and not yet answered, in
	// order (pipeline.go).
	inflight []piped
}

var _ transport.PassiveConn = (*Client)(nil)

// Dial prepares a connection to the active party at addr ("host:port").
// The connection is made lazily and re-made after failures; the first call
// (normally Hello) waits for it up to CallTimeout.
func Dial(addr string, o ClientOptions) (*Client, error) {
	var creds credentials.TransportCredentials
	switch {
	case o.TLS != nil && o.InsecureLoopback:
		return nil, errors.New("grpcnet: client: set either TLS or InsecureLoopback, not both")
	case o.TLS != nil:
		if o.TLS.ServerName == "" || len(o.TLS.Certificates) == 0 {
			return nil, errors.New("grpcnet: client: the TLS config must pin the server name and carry a client certificate (use pki.ClientTLSConfig)")
		}
		creds = credentials.NewTLS(o.TLS)
	case o.InsecureLoopback:
		if err := CheckLoopback(addr); err != nil {
			return nil, err
		}
		creds = insecure.NewCredentials()
	default:
		return nil, errors.New("grpcnet: client: no TLS config (mutual TLS is required; InsecureLoopback is for loopback tests only)")
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.ExchangeTimeout <= 0 {
		o.ExchangeTimeout = 2 * time.Minute
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Minute
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 6
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = 100 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{o: o, log: o.Logger.With("side", "passive", "addr", addr), max: o.MaxMessageBytes / 4, addr: addr}
	if o.TLS != nil {
		creds = credentials.NewTLS(c.recordingTLS(o.TLS))
	}
	if o.PipelineDepth < 0 || o.PipelineDepth > transport.MaxInFlight {
		return nil, fmt.Errorf("grpcnet: client: pipeline depth %d, want 0 to %d", o.PipelineDepth, transport.MaxInFlight)
	}
	conn, err := grpc.NewClient(addr, append(append(windowOptions(o.PipelineDepth, o.MaxMessageBytes), dialerOptions(o.dialer)...),
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMessageBytes), grpc.MaxCallSendMsgSize(o.MaxMessageBytes)),
		grpc.WithStatsHandler(&statsHandler{c: &c.cnt}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}),
		// Reconnect quickly after the active party restarts (gRPC's default
		// backoff grows to two minutes).
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
			Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second}}),
	)...)
	if err != nil {
		return nil, fmt.Errorf("grpcnet: dial %s: %w", addr, err)
	}
	c.conn, c.rpc = conn, pb.NewSplitLearningClient(conn)
	return c, nil
}

// ErrHandshake is wrapped by the error of a call that failed because the
// TLS handshake with the active party failed: its certificate was refused
// by this party, or this party's certificate by it. Retrying cannot help,
// so the Client does not retry it.
var ErrHandshake = errors.New("grpcnet: TLS handshake with the active party failed")

// recordingTLS returns a copy of cfg that remembers why it refused the
// active party's certificate, so that the error can name the cause.
func (c *Client) recordingTLS(cfg *tls.Config) *tls.Config {
	cl := cfg.Clone()
	verify := cfg.VerifyConnection
	cl.VerifyConnection = func(cs tls.ConnectionState) error {
		var err error
		if verify != nil {
			err = verify(cs)
		}
		if err != nil {
			c.tlsErr.Store(&err)
		}
		return err
	}
	return cl
}

// handshakeErr returns an error wrapping ErrHandshake, naming the cause,
// when err is a failed TLS handshake, else nil.
func (c *Client) handshakeErr(err error) error {
	if status.Code(err) != codes.Unavailable {
		return nil
	}
	msg := status.Convert(err).Message()
	switch {
	case strings.Contains(msg, "remote error: tls:"):
		return fmt.Errorf("%w: the active party at %s refused this party's certificate (%s): check that it was issued by the CA the active party trusts (its --ca) and carries the name the active party expects (its --peer-name)",
			ErrHandshake, c.addr, tlsCause(msg))
	case strings.Contains(msg, "authentication handshake failed"):
		cause := tlsCause(msg)
		p := c.tlsErr.Load()
		if p == nil && !strings.Contains(msg, "tls: ") {
			// The connection broke during the handshake (reset, EOF, a
			// timeout): nothing was refused, and a retry may succeed.
			return nil
		}
		if p != nil {
			cause = (*p).Error()
		}
		return fmt.Errorf("%w: the certificate of the server at %s was refused: %s; check --ca (the CA that issued the active party's certificate) and --peer-name (the name it must carry)",
			ErrHandshake, c.addr, cause)
	}
	return nil
}

// tlsCause extracts the TLS part of a gRPC connection error message.
func tlsCause(msg string) string {
	if i := strings.Index(msg, "tls: "); i >= 0 {
		return strings.TrimRight(msg[i:], `"`)
	}
	return msg
}

// Stats returns the client's traffic counters.
func (c *Client) Stats() Stats { return c.cnt.snapshot() }

func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.o.CallTimeout)
}

// Hello sends the passive party's greeting and returns the active party's
// view. It fails when the active refuses or when the views disagree
// (version or config fingerprint), naming every difference.
func (c *Client) Hello(ctx context.Context, local Hello) (*Hello, error) {
	local = local.WithDefaults()
	fp, err := fingerprintToPB(local.Config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	req := &pb.HelloRequest{ProtocolVersion: local.Version, Party: local.Party, Config: fp, IdFormat: local.IDFormat}
	// Not WaitForReady: a connection that cannot be made fails the call at
	// once, so that a refused TLS handshake (which no retry can fix) is
	// reported now instead of after CallTimeout. An active party that is
	// not listening yet is waited for here, with backoff.
	var resp *pb.HelloResponse
	var header metadata.MD
	wait := c.o.ConnectTimeout
	if wait <= 0 || wait > c.o.CallTimeout {
		wait = c.o.CallTimeout
	}
	giveUp := time.Now().Add(wait)
	lastLog := time.Time{}
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		resp, err = c.rpc.Hello(c.withSession(ctx), req, grpc.Header(&header))
		if err == nil {
			break
		}
		if herr := c.handshakeErr(err); herr != nil {
			return nil, herr // not retried: the caller reports it
		}
		if status.Code(err) != codes.Unavailable {
			return nil, fmt.Errorf("grpcnet: hello: %w", err)
		}
		if time.Since(lastLog) >= 30*time.Second {
			c.log.Warn("grpcnet: the active party does not answer yet; retrying", "addr", c.addr, "until", giveUp.Format(time.TimeOnly), "err", status.Convert(err).Message())
			lastLog = time.Now()
		}
		left := time.Until(giveUp)
		if left <= 0 {
			return nil, fmt.Errorf("grpcnet: hello: nothing answered at %s within %v: %w", c.addr, wait, err)
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("grpcnet: hello: the active party at %s was not reachable within %v: %w", c.addr, c.o.CallTimeout, err)
		}
	}
	remote := &Hello{Version: resp.GetProtocolVersion(), Party: resp.GetParty(), Config: fingerprintFromPB(resp.GetConfig()), IDFormat: resp.GetIdFormat()}
	if !resp.GetAccepted() {
		c.log.Warn("grpcnet: the active party refused the run", "reason", resp.GetReason())
		return remote, configkey.Keyed(fmt.Errorf("grpcnet: hello: the active party %q refused the run: %s", remote.Party, resp.GetReason()), local.MismatchKeys(*remote)...)
	}
	if reason := local.Mismatch(*remote); reason != "" {
		c.log.Warn("grpcnet: refusing the run", "reason", reason)
		return remote, configkey.Keyed(fmt.Errorf("grpcnet: hello: the active party %q accepted but disagrees: %s", remote.Party, reason), local.MismatchKeys(*remote)...)
	}
	tok := header.Get(SessionHeader)
	if len(tok) != 1 || tok[0] == "" {
		return remote, errors.New("grpcnet: hello: the active party accepted without opening a session (an active party of an older version?)")
	}
	// A stream of the previous session would be refused: start afresh.
	c.mu.Lock()
	c.session.Store(tok[0])
	c.wire = local.Config.Wire
	c.dropStream()
	c.inflight = c.inflight[:0] // the old session's messages are abandoned
	c.mu.Unlock()
	return remote, nil
}

// PSI sends one PSI round; it fits psi.Run as
// func(r *psi.Request) (*psi.Response, error) { return c.PSI(ctx, r) }.
func (c *Client) PSI(ctx context.Context, req *psi.Request) (*psi.Response, error) {
	if req.Round < 0 {
		return nil, fmt.Errorf("grpcnet: PSI: negative round %d", req.Round)
	}
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rpc.PSI(c.withSession(ctx), &pb.PSIRequest{Round: uint32(req.Round), Elements: req.Elements, Digest: req.Digest}, grpc.WaitForReady(true))
	if err != nil {
		return nil, fmt.Errorf("grpcnet: PSI round %d: %w", req.Round, err)
	}
	return &psi.Response{Round: int(resp.GetRound()), Elements: resp.GetElements(), Own: resp.GetOwn(), Digest: resp.GetDigest()}, nil
}

// Checkpoint asks the active party to checkpoint after step training
// steps; it returns once the active has agreed (and checkpointed).
//
// A passive party resuming below its newest checkpoint lists holds, the
// steps of the checkpoints it holds intact (ascending, at most MaxHolds):
// see Handlers.Checkpoint.
func (c *Client) Checkpoint(ctx context.Context, step int64, holds ...int64) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	resp, err := c.rpc.Checkpoint(c.withSession(ctx), &pb.CheckpointRequest{Step: step, Holds: holds}, grpc.WaitForReady(true))
	if err != nil {
		return fmt.Errorf("grpcnet: checkpoint at step %d: %w", step, err)
	}
	if resp.GetStep() != step {
		return fmt.Errorf("grpcnet: checkpoint at step %d: the active party confirmed step %d", step, resp.GetStep())
	}
	return nil
}

// Shutdown tells the active party that the run is over; a non-empty reason
// marks an abort. Call it before Close. At a clean end (no reason) it
// waits, like PSI and Checkpoint, for a connection that is down for a
// moment to come back (until ctx or the call timeout ends) rather than
// failing at once: a link cut during the last exchange would otherwise
// fail a run whose training had ended. An abort is sent once: the link
// or the peer is often why the run ends, and waiting would only delay it.
func (c *Client) Shutdown(ctx context.Context, reason string) error {
	ctx, cancel := c.callCtx(ctx)
	defer cancel()
	if _, err := c.rpc.Shutdown(c.withSession(ctx), &pb.ShutdownRequest{Reason: reason}, grpc.WaitForReady(reason == "")); err != nil {
		return fmt.Errorf("grpcnet: shutdown: %w", err)
	}
	return nil
}

// Exchange sends f on the Train stream and waits for the answer, retrying
// transient failures as the package doc describes. The answer is checked
// (step, batch, shape, finiteness) before it is returned.
func (c *Client) Exchange(ctx context.Context, f *transport.Forward) (*transport.Backward, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClientClosed
	}
	if len(c.inflight) > 0 {
		h := c.inflight[0].head
		return nil, fmt.Errorf("grpcnet: %v step %d batch %d refused: the pipelined %v step %d batch %d is unanswered", f.Phase, f.Step, f.Batch, h.Phase, h.Step, h.Batch)
	}
	m, err := encodeForward(f, c.wire.Embedding, c.wire.Compression)
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%v step %d batch %d", f.Phase, f.Step, f.Batch)
	var reply *pb.Backward
	err = c.retry(ctx, where, func() (err error) {
		reply, err = c.attempt(ctx, m)
		return err
	}, func(attempt int, err error, delay time.Duration) {
		c.log.Warn("grpcnet: exchange failed, re-sending", "msg", where, "attempt", attempt, "in", delay, "err", err)
	}, func(attempts int, err error) {
		c.log.Warn("grpcnet: exchange failed", "msg", where, "attempts", attempts, "err", err)
	})
	if err != nil {
		return nil, err
	}
	b, err := decodeBackward(reply, f, c.max, c.wire.Gradient, c.wire.Compression)
	if err != nil {
		c.cnt.rejected.Add(1)
		c.log.Warn("grpcnet: refused the active party's answer", "msg", where, "err", err)
		return nil, fmt.Errorf("grpcnet: %s: refused the answer: %w", where, err)
	}
	c.cnt.exchanges.Add(1)
	return b, nil
}

// retry calls send until it succeeds, and returns nil, or fails for good:
// ctx ends, the error is not transient, or MaxRetries re-sends were made.
// Before each re-send it calls resending (the attempt that failed, from 1,
// its error and the backoff delay), waits the delay (BackoffBase doubling
// per attempt, at most BackoffMax) and counts a retry. A failure other
// than ctx ending is passed to failed (nil: none), with the attempts
// made. The error it returns names where.
func (c *Client) retry(ctx context.Context, where string, send func() error,
	resending func(attempt int, err error, delay time.Duration), failed func(attempts int, err error)) error {
	for attempt := 0; ; attempt++ {
		err := send()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("grpcnet: %s: %w", where, ctx.Err())
		}
		if !transient(err) || attempt >= c.o.MaxRetries {
			if failed != nil {
				failed(attempt+1, err)
			}
			return fmt.Errorf("grpcnet: %s: %w", where, err)
		}
		delay := min(c.o.BackoffBase<<min(attempt, 30), c.o.BackoffMax)
		resending(attempt+1, err, delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("grpcnet: %s: %w", where, ctx.Err())
		}
		c.cnt.retries.Add(1)
	}
}

// attempt sends m once on the current stream (opening one if needed) and
// waits for the answer within ExchangeTimeout. On failure the stream is
// dropped.
func (c *Client) attempt(ctx context.Context, m *pb.Forward) (*pb.Backward, error) {
	return c.onStream(ctx, func(bool) error { return c.stream.Send(m) }, true)
}

// onStream calls send on the current stream (opening one if needed; fresh
// says it was just opened) and, when recv, waits for one answer, all
// within ExchangeTimeout. On failure the stream is dropped.
func (c *Client) onStream(ctx context.Context, send func(fresh bool) error, recv bool) (*pb.Backward, error) {
	var timedOut atomic.Bool
	var streamCancel context.CancelFunc
	var mu sync.Mutex // guards streamCancel against the timer
	cancelStream := func() {
		mu.Lock()
		defer mu.Unlock()
		if streamCancel != nil {
			streamCancel()
		}
	}
	timer := time.AfterFunc(c.o.ExchangeTimeout, func() { timedOut.Store(true); cancelStream() })
	defer timer.Stop()
	stop := context.AfterFunc(ctx, cancelStream)
	defer stop()

	fresh := c.stream == nil
	if fresh {
		sctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		streamCancel = cancel
		mu.Unlock()
		if timedOut.Load() || ctx.Err() != nil {
			cancel()
		}
		st, err := c.rpc.Train(c.withSession(sctx), grpc.WaitForReady(true))
		if err != nil {
			cancel()
			return nil, c.attemptErr(err, timedOut.Load())
		}
		c.stream, c.cancel = st, cancel
	} else {
		mu.Lock()
		streamCancel = c.cancel
		mu.Unlock()
		if timedOut.Load() || ctx.Err() != nil {
			c.cancel()
		}
	}
	err := send(fresh)
	var reply *pb.Backward
	switch {
	case err == nil && recv:
		reply, err = c.stream.Recv()
	case errors.Is(err, io.EOF) && recv:
		// The stream has ended; Recv returns the real status. (Without
		// recv, answers may still be queued before it: they are not
		// read here, and the stream is dropped; a re-send gets them.)
		_, err = c.stream.Recv()
	}
	if err != nil {
		c.dropStream()
		return nil, c.attemptErr(err, timedOut.Load())
	}
	return reply, nil
}

func (c *Client) attemptErr(err error, timedOut bool) error {
	if timedOut {
		return status.Errorf(codes.DeadlineExceeded, "grpcnet: no answer within %v", c.o.ExchangeTimeout)
	}
	if errors.Is(err, io.EOF) {
		return status.Error(codes.Unavailable, "grpcnet: the stream ended without a status")
	}
	return err
}

func (c *Client) dropStream() {
	if c.cancel != nil {
		c.cancel()
	}
	c.stream, c.cancel = nil, nil
}

// transient reports whether an exchange that failed with err may be
// re-sent.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// NeedsNewSession reports whether an error of Exchange means that the
// connection to the active party was lost beyond the retries, or that the
// active party restarted and no longer knows this session (it refuses
// Train before a Hello): the passive may start a new session (Hello, PSI,
// resume from a common checkpoint). Refusals of a message's content are
// not session errors.
func NeedsNewSession(err error) bool {
	if err == nil || errors.Is(err, ErrClientClosed) {
		return false
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	case codes.FailedPrecondition:
		return strings.Contains(st.Message(), errBeforeHello)
	}
	return false
}

// Close ends the Train stream, which tells the active party that no more
// batches follow (its Recv returns io.EOF), and closes the connection.
// Send Shutdown first when the active should also be told why.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var err error
	if c.stream != nil {
		if err = c.stream.CloseSend(); err == nil {
			// Wait (briefly) for the server to end the stream, so that it
			// has seen the end before the connection goes away.
			st, done := c.stream, make(chan struct{})
			go func() {
				for {
					if _, rerr := st.Recv(); rerr != nil {
						break
					}
				}
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
		}
		c.dropStream()
	}
	if cerr := c.conn.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("grpcnet: close: %w", cerr)
	}
	return err
}
