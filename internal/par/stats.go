package par

import (
	"sync/atomic"
	"time"
)

// Stats are the pool's counters since the last Measure(true): where the
// time of a step's parallel parts goes beyond the parts' own work. Only
// the Do calls that used the pool count (not a nested or concurrent one).
type Stats struct {
	Calls       int64         // Do calls that used the pool
	Parts       int64         // their parts
	WorkerParts int64         // of those, the parts a worker ran (the caller ran the rest)
	Wait        time.Duration // the callers' time waiting, after their own parts, for the workers' last parts
	Spin        time.Duration // the workers' time looking for a part (spinning) between parts and before parking
	Parks       int64         // times a worker parked after spinning without a part (SpinTime, or less when another goroutine waited)
	Yields      int64         // of those, the parks before SpinTime because another goroutine waited for a processor
	Gaps        int64         // stretches between the end of one pool Do and the start of the next
	Between     time.Duration // their summed length (the callers' serial code, or idle time)
	ShortGaps   int64         // of the stretches, those shorter than the spin (SpinTime: what a spinning worker bridges)
	Short       time.Duration // their summed length
}

var (
	measuring atomic.Bool
	counters  struct {
		calls, parts, workerParts, wait, spin, parks, yields, gaps, between, shortGaps, short atomic.Int64
		lastEnd                                                                               atomic.Int64 // UnixNano of the last pool Do's end, 0 none yet
	}
)

// Measure resets the counters and starts (on) or stops counting. Counting
// reads the clock a few times per Do and per worker part (tens of
// nanoseconds each); off, the pool reads none.
func Measure(on bool) {
	measuring.Store(false)
	c := &counters
	for _, v := range []*atomic.Int64{&c.calls, &c.parts, &c.workerParts, &c.wait, &c.spin, &c.parks, &c.yields,
		&c.gaps, &c.between, &c.shortGaps, &c.short, &c.lastEnd} {
		v.Store(0)
	}
	measuring.Store(on)
}

// Read returns the counters counted since Measure(true).
func Read() Stats {
	c := &counters
	return Stats{
		Calls: c.calls.Load(), Parts: c.parts.Load(), WorkerParts: c.workerParts.Load(),
		Wait: time.Duration(c.wait.Load()), Spin: time.Duration(c.spin.Load()), Parks: c.parks.Load(), Yields: c.yields.Load(),
		Gaps: c.gaps.Load(), Between: time.Duration(c.between.Load()),
		ShortGaps: c.shortGaps.Load(), Short: time.Duration(c.short.Load()),
	}
}

// countStart counts a pool Do of n parts starting now, and the stretch
// since the last one ended; it returns the time it read (zero when not
// measuring).
func countStart(n int) time.Time {
	if !measuring.Load() {
		return time.Time{}
	}
	now := time.Now()
	counters.calls.Add(1)
	counters.parts.Add(int64(n))
	if last := counters.lastEnd.Load(); last != 0 {
		gap := now.UnixNano() - last
		counters.gaps.Add(1)
		counters.between.Add(gap)
		if gap < spinNs.Load() {
			counters.shortGaps.Add(1)
			counters.short.Add(gap)
		}
	}
	return now
}

// countEnd counts the end of a pool Do whose caller started waiting for
// the workers' parts at waitFrom (zero when not measuring).
func countEnd(waitFrom time.Time) {
	if waitFrom.IsZero() || !measuring.Load() {
		return
	}
	now := time.Now()
	counters.wait.Add(int64(now.Sub(waitFrom)))
	counters.lastEnd.Store(now.UnixNano())
}

// countSpin adds a worker's spin that began at from (zero when not
// measuring) and ended now, parked tells whether it ended by parking.
// It returns the time it read, or zero.
func countSpin(from time.Time, parked bool) time.Time {
	if !measuring.Load() {
		return time.Time{}
	}
	now := time.Now()
	if !from.IsZero() {
		counters.spin.Add(int64(now.Sub(from)))
	}
	if parked {
		counters.parks.Add(1)
	}
	return now
}

// Measuring reports whether the pool is counting (Measure(true)).
func Measuring() bool { return measuring.Load() }

// countYield counts a worker's park before its spin ended because another
// goroutine waited for a processor.
func countYield() {
	if measuring.Load() {
		counters.yields.Add(1)
	}
}
