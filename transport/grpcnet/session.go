package grpcnet

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// # Sessions
//
// A successful Hello opens a session: the server draws a random 128-bit
// session token and sends it in the Hello response's header metadata
// (SessionHeader). Every later call of the client (PSI, Train, Checkpoint,
// Shutdown, Score) carries it in its request metadata, and the server
// refuses any call whose token is not the current session's with
// codes.FailedPrecondition and a message containing errBeforeHello (which
// NeedsNewSession recognises). A connection holding the passive party's
// certificate but not the session (a second process, a stale one) can
// therefore not roll the run back, abort it or end it.
//
// At most one session is live. The rule for a second Hello:
//
//   - a Hello carrying the current session's token (the same client
//     starting over, possibly on a new connection) replaces the session;
//   - any other Hello is refused while the current session is live: its
//     last call arrived on a connection that is still open, or the
//     session saw a call within Timeouts.SessionIdle (2 s unless set). It
//     is accepted once the session is gone: its connection closed (a
//     process that exits or is killed closes its connections at once; a
//     vanished machine is detected by the keepalive within about 20 s)
//     and SessionIdle has passed since its last call, or after the
//     session's Shutdown.
//
// The token is a capability within one server process: a restarted active
// party knows no session, so every call of an old session is refused and
// the passive starts a new one.

// SessionHeader is the metadata key of the session token.
const SessionHeader = "splitguard-session"

// connKey tags a connection's context with its number.
type connKey struct{}

// connID returns the number of the connection ctx belongs to (0 if none).
func connID(ctx context.Context) uint64 {
	id, _ := ctx.Value(connKey{}).(uint64)
	return id
}

// sessions tracks the open connections and the current session.
type sessions struct {
	next atomic.Uint64

	mu       sync.Mutex
	open     map[uint64]bool
	token    string
	conn     uint64        // connection of the session's last call
	last     time.Time     // time of the session's last call
	ended    bool          // the session sent Shutdown
	idle     time.Duration // Timeouts.SessionIdle
	peerAddr string        // for refusals
}

func (ss *sessions) connOpened() uint64 {
	id := ss.next.Add(1)
	ss.markOpen(id)
	return id
}

// markOpen records connection id as open (numbered by connOpened, or by
// the Parties that share one listener among several sessions).
func (ss *sessions) markOpen(id uint64) {
	ss.mu.Lock()
	if ss.open == nil {
		ss.open = map[uint64]bool{}
	}
	ss.open[id] = true
	ss.mu.Unlock()
}

// holds reports whether tok is the current session's token.
func (ss *sessions) holds(tok string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return tok != "" && ss.token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(ss.token)) == 1
}

func (ss *sessions) connClosed(id uint64) {
	ss.mu.Lock()
	delete(ss.open, id)
	ss.mu.Unlock()
}

// incomingToken is the session token a call carries ("" if none).
func incomingToken(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(SessionHeader); len(v) == 1 {
		return v[0]
	}
	return ""
}

// liveLocked reports whether the current session blocks a Hello from
// another client.
func (ss *sessions) liveLocked() bool {
	if ss.token == "" || ss.ended {
		return false
	}
	return ss.open[ss.conn] || time.Since(ss.last) < ss.idle
}

// admit returns an error saying why the current session keeps a Hello on
// ctx out, or nil.
func (ss *sessions) admit(ctx context.Context) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	tok := incomingToken(ctx)
	if ss.liveLocked() && subtle.ConstantTimeCompare([]byte(tok), []byte(ss.token)) != 1 {
		return fmt.Errorf("another session of this run is live (its last call came from %s %v ago); a new session is accepted once that one has ended",
			ss.peerAddr, time.Since(ss.last).Round(time.Millisecond))
	}
	return nil
}

// begin starts a session for a Hello on ctx from addr (admitted by admit
// under the server's Hello lock) and returns its token.
func (ss *sessions) begin(ctx context.Context, addr string) (string, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	ss.token, ss.conn, ss.last, ss.ended, ss.peerAddr = hex.EncodeToString(b[:]), connID(ctx), time.Now(), false, addr
	return ss.token, nil
}

// check admits a call of the current session and records its connection;
// what names the call in the refusal.
func (ss *sessions) check(ctx context.Context, what string) error {
	tok := incomingToken(ctx)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(ss.token)) != 1 {
		if tok == "" {
			return statusf(codes.FailedPrecondition, "%s refused: a call %s", what, errBeforeHello)
		}
		return statusf(codes.FailedPrecondition, "%s refused: the call's session is not the current one (a call %s)", what, errBeforeHello)
	}
	ss.conn, ss.last = connID(ctx), time.Now()
	return nil
}

// end marks the current session as ended by its Shutdown.
func (ss *sessions) end(ctx context.Context) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if incomingToken(ctx) == ss.token {
		ss.ended = true
	}
}

// connTracker is the stats handler part that numbers connections.
type connTracker struct{ ss *sessions }

func (h connTracker) tagConn(ctx context.Context) context.Context {
	return context.WithValue(ctx, connKey{}, h.ss.connOpened())
}

func (h connTracker) handleConn(ctx context.Context, st stats.ConnStats) {
	if _, ok := st.(*stats.ConnEnd); ok {
		if id := connID(ctx); id != 0 {
			h.ss.connClosed(id)
		}
	}
}

// withSession adds the client's session token (if any) to ctx.
func (c *Client) withSession(ctx context.Context) context.Context {
	if tok, _ := c.session.Load().(string); tok != "" {
		return metadata.AppendToOutgoingContext(ctx, SessionHeader, tok)
	}
	return ctx
}
