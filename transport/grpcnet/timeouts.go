package grpcnet

import "time"

// Timeouts bound how long the active party's server waits; a zero field
// takes its default. Tests shorten them.
type Timeouts struct {
	// Handshake bounds the TLS handshake of a new connection
	// (DefaultHandshakeTimeout; gRPC's own default holds it 120 s).
	Handshake time.Duration
	// SessionIdle is how long after its last call a session whose
	// connection has closed still blocks a Hello from another client
	// (DefaultSessionIdle).
	SessionIdle time.Duration
	// CloseGrace is how long Close lets open calls finish before it cuts
	// the connections (DefaultCloseGrace); CloseWait how long it then waits
	// for the call handlers and the serving goroutine before it gives up
	// on them (DefaultCloseWait).
	CloseGrace, CloseWait time.Duration
}

// The defaults of Timeouts.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultSessionIdle      = 2 * time.Second
	DefaultCloseGrace       = 2 * time.Second
	DefaultCloseWait        = 5 * time.Second
)

// withDefaults returns t with every zero field set to its default.
func (t Timeouts) withDefaults() Timeouts {
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&t.Handshake, DefaultHandshakeTimeout}, {&t.SessionIdle, DefaultSessionIdle},
		{&t.CloseGrace, DefaultCloseGrace}, {&t.CloseWait, DefaultCloseWait}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return t
}
