package netrun

import (
	"time"

	"golang.org/x/time/rate"
)

// A run's later alignments (each a new session's PSI, which tells the
// peer which of its IDs the active holds) are limited to realignBurst in
// a row, then one per realignEvery: a passive that reconnects after a cut
// link never notices, a certificate holder flooding the active party once
// the passive is gone learns little.
const (
	realignBurst = 10
	realignEvery = time.Minute
)

// realignWait takes a realignment from lim at now, or returns how long
// until one is free (taking nothing).
func realignWait(lim *rate.Limiter, now time.Time) time.Duration {
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// msPer is d per step in milliseconds.
func msPer(d time.Duration, steps int64) float64 {
	return float64(d.Microseconds()) / 1e3 / float64(max(steps, 1))
}
