package netrun

import (
	"errors"
	"log/slog"
	"time"
)

// Options are the parts of a networked run that are not configuration.
type Options struct {
	// Logger receives progress, refusals and connection events
	// (nil discards them).
	Logger *slog.Logger
	// Clock, when set, is the wall clock the TLS handshakes check the
	// peer's certificate against (time.Now when nil), for tests of a
	// machine whose clock is off. Timeouts use the monotonic clock and do
	// not read it.
	Clock func() time.Time
	// Ready, when set, is called with the active party's listening address
	// (useful with port 0).
	Ready func(addr string)
	// Force lets a party replace another run in its run directory (a
	// finished run, or one of another configuration), which is otherwise
	// refused before anything is written; its checkpoints go with it.
	Force bool

	// afterPassiveStep, when set (by in-package tests), is called after
	// every training step the passive completed (step steps done), before
	// any checkpoint of that step; an error ends the run there.
	afterPassiveStep func(step int64) error
	// afterPassiveSaved, when set (by in-package tests), is called after
	// the passive saved its checkpoint of a step, before it sends the next
	// one; an error ends the run there.
	afterPassiveSaved func(step int64) error
	// inProcessSecret, when set (by in-package tests), makes the party's
	// secret 0 whatever its TLS key, so that it draws its passports from
	// the shared seed alone, as the in-process run does, and a two-party
	// run can be compared with that one number for number.
	inProcessSecret bool
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// ErrPeerGone is wrapped by the error a party returns when its peer stayed
// away longer than the peer timeout; what was learned has been saved.
var ErrPeerGone = errors.New("netrun: the peer went away")
