// Package par runs the parallel parts of a training step — the halves of
// a matrix product, the embedding's field shards, a convolution's batch
// halves — and the passes of the table reader over a chunk of lines on a
// few long-lived worker goroutines.
//
// A part of the step lasts 50–500 µs. Handing it to a parked goroutine
// costs a wake-up of an idle OS thread, which on a virtual machine can
// take as long as the part itself. So a worker first spins for a short
// while after each part (SpinTime), polling with the PAUSE hint and never
// yielding: a part offered while it spins starts within microseconds.
// Then it parks, which frees its processor for the process's other
// goroutines (the audit queue, the network, a baseline fit), and the next
// Do wakes it. It parks before the spin ends when it sees one of those
// goroutines ready to run with no processor to run on (a look at the
// scheduler's run queues every few microseconds): the spin would only
// keep it waiting, and in a whole run its work is real. A spinning goroutine that yielded instead (runtime.Gosched)
// would go to the global run queue, which its processor reads before it
// looks at other processors' queues, so it would come straight back and a
// goroutine readied meanwhile would wait for the next preemption. The
// caller runs part 0 itself and then takes back every part no worker has
// claimed yet, so a busy or slow pool costs no more than running the parts
// in turn; it waits for the workers' last parts in the same way, spinning
// for SpinTime and then parking until the worker that ends the last part
// hands it the processor. One Do at a time uses the pool; a nested or
// concurrent one starts goroutines where there are cores to spare, and
// runs its parts in turn where there are not.
//
// Which goroutine runs a part never changes a result: callers give each
// part its own fixed share of the work and output.
package par

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Spin is how long an idle worker keeps looking for a new part before it
// parks, unless SetSpin says otherwise.
const Spin = 300 * time.Microsecond

// MaxSpin is the longest spin SetSpin takes.
const MaxSpin = 10 * time.Millisecond

// spinNs is the spin in force, in nanoseconds.
var spinNs atomic.Int64

func init() { spinNs.Store(int64(Spin)) }

// SetSpin sets how long an idle worker keeps looking for a new part before
// it parks, from the next spin on: 0 parks at once (every part offered to
// a parked worker then waits for its wake-up), up to MaxSpin. A long spin
// starts parts within microseconds where the cores are the process's own;
// where other processes hold the cores, a spinning worker only takes
// processor time from the callers' threads, and a short one does better
// (docs/SCALING.md).
func SetSpin(d time.Duration) error {
	if d < 0 || d > MaxSpin {
		return fmt.Errorf("par: spin %v, want 0 to %v", d, MaxSpin)
	}
	spinNs.Store(int64(d))
	return nil
}

// SpinTime returns the spin in force (SetSpin).
func SpinTime() time.Duration { return time.Duration(spinNs.Load()) }

// clockEvery is how many times a spinning goroutine polls between
// readings of the clock: each poll waits a PAUSE instruction (pause,
// 10–50 ns), so the spin overshoots its deadline by a few microseconds at
// most.
const clockEvery = 64

// lookEvery is how many clock readings a spinning goroutine makes
// between looks at the scheduler (a look): a look costs about 250 ns and
// takes the scheduler's lock briefly, so it comes every 256 polls (5–15
// µs), well inside a part's 50–500 µs.
const lookEvery = 4

// waitingFor is how long a goroutine must be seen waiting for a
// processor, in every look, before a spinning goroutine makes way for it:
// a goroutine just readied for an idle processor (a sleeper's timer, a
// worker woken for a part) shows as waiting for the few microseconds
// until that processor takes it. A goroutine that really waits would
// otherwise wait out the spin (300 µs).
const waitingFor = 50 * time.Microsecond

// A look reads how many goroutines are ready to run without a processor,
// how many run, and how many processors there are.
var lookMetrics = [3]string{"/sched/goroutines/runnable:goroutines", "/sched/goroutines/running:goroutines", "/sched/gomaxprocs:threads"}

// look is one goroutine's view of the scheduler: its samples (which
// metrics.Read writes) and since when every look has found a goroutine
// waiting (zero: the last look found none).
type look struct {
	s     [len(lookMetrics)]metrics.Sample
	since time.Time
}

// newLook returns a look with its samples named.
func newLook() look {
	var l look
	for i, name := range lookMetrics {
		l.s[i].Name = name
	}
	return l
}

// othersWaiting reports whether, in every look for waitingFor up to now,
// some goroutine of the process was ready to run while every processor
// ran one: a spinning worker (or a caller spinning for the workers' last
// parts) then holds the processor it needs, for up to the spin, or until
// the runtime preempts the spinner 10 ms on. In a whole run that is the
// other party's half of the step, the baseline's fit, the audit queue or
// the loader, whose work is real where the spin is not.
func (l *look) othersWaiting(now time.Time) bool {
	metrics.Read(l.s[:])
	u := func(i int) uint64 {
		if l.s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return l.s[i].Value.Uint64()
	}
	if u(0) == 0 || u(1) < u(2) {
		l.since = time.Time{}
		return false
	}
	if l.since.IsZero() {
		l.since = now
	}
	return now.Sub(l.since) >= waitingFor
}

// maxWorkers bounds the pool.
const maxWorkers = 64

// job is one call of Do.
type job struct {
	fn   func(int)
	n    int32
	seq  uint64       // which Do of the pool it is, from 1
	next atomic.Int32 // the next part to claim
	done atomic.Int32 // parts finished
	// waiting is the caller's state while the workers end their parts:
	// callerRunning, callerParking (it parks on finished unless every
	// part is done) or callerWoken (the worker that ended the last part
	// sends, or has sent, on finished).
	waiting atomic.Int32
}

// The states of job.waiting.
const (
	callerRunning int32 = iota
	callerParking
	callerWoken
)

// claimAndRun runs parts of j until none is left unclaimed; byWorker
// says a worker runs them. It reports whether it woke the caller, parked
// waiting for the last part, which it ended: the worker then parks at
// once, so that the caller, readied on the worker's processor, runs there
// straight away.
func (j *job) claimAndRun(byWorker bool) (wokeCaller bool) {
	count := byWorker && measuring.Load()
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			break
		}
		j.fn(int(i))
		if count {
			// Before the part counts as done, so that the caller reads
			// it once Do returns.
			counters.workerParts.Add(1)
		}
		if j.done.Add(1) == j.n && byWorker && j.waiting.Swap(callerWoken) == callerParking {
			finished <- struct{}{}
			wokeCaller = true
		}
	}
	return wokeCaller
}

// waitParts returns once every part of j has ended: it spins for
// SpinTime (less when another goroutine waits for a processor:
// othersWaiting), then parks until the worker that ends the last part
// wakes it.
func (j *job) waitParts() {
	deadline := time.Now().Add(SpinTime())
	callerLook.since = time.Time{}
	for spins := 1; j.done.Load() < j.n; spins++ {
		pause()
		if spins%clockEvery != 0 {
			continue
		}
		if now := time.Now(); now.After(deadline) || spins%(clockEvery*lookEvery) == 0 && callerLook.othersWaiting(now) {
			j.waiting.Store(callerParking)
			if j.done.Load() < j.n || j.waiting.Swap(callerRunning) == callerWoken {
				// The last part's worker sees callerParking and sends.
				<-finished
			}
			return
		}
	}
}

var (
	busy      atomic.Bool         // a Do is using the pool
	busyParts atomic.Int32        // how many parts it has
	current   atomic.Pointer[job] // the job on offer
	parked    atomic.Int32        // workers parked on wake
	wake      = make(chan struct{}, maxWorkers)
	finished  = make(chan struct{}, 1) // wakes the caller parked in waitParts

	startMu sync.Mutex   // held while starting workers
	started atomic.Int32 // workers started

	jobs uint64 // Do calls that used the pool (written only by the Do holding it)

	callerLook = newLook() // the look of the Do holding the pool (only it waits in waitParts)
)

// Do calls fn(0), …, fn(n−1), each exactly once and possibly at the same
// time on different goroutines, and returns when all have returned.
// fn(0) runs on the calling goroutine; with GOMAXPROCS 1, all of them
// run there, in turn. A Do called while another is in
// progress (from fn, or from another goroutine) starts a goroutine for
// each of its other parts instead of using the pool when GOMAXPROCS is at
// least twice the parts of the Do in progress, and otherwise runs them in
// turn on its caller.
func Do(n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	procs := runtime.GOMAXPROCS(0)
	if n == 1 || procs == 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	if !busy.CompareAndSwap(false, true) {
		// The pool is taken (a nested or concurrent Do). With cores to
		// spare beyond the parts already running, the parts after the
		// first go to goroutines of their own, so that a nested split
		// still spreads on a machine with many cores; otherwise they
		// run in turn here (more goroutines than cores only
		// interleave).
		if procs < 2*int(busyParts.Load()) {
			for i := range n {
				fn(i)
			}
			return
		}
		var wg sync.WaitGroup
		for i := 1; i < n; i++ {
			wg.Go(func() { fn(i) })
		}
		fn(0)
		wg.Wait()
		return
	}
	busyParts.Store(int32(n))
	defer busy.Store(false)
	measured := !countStart(n).IsZero()
	ensureWorkers(min(n-1, procs-1, maxWorkers))
	jobs++
	j := &job{fn: fn, n: int32(n), seq: jobs}
	j.next.Store(1)
	current.Store(j)
	for k := min(int(parked.Load()), n-1); k > 0; k-- {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	fn(0)
	j.done.Add(1)
	j.claimAndRun(false)
	var waitFrom time.Time
	if measured {
		waitFrom = time.Now()
	}
	if j.done.Load() < j.n {
		j.waitParts()
	}
	current.CompareAndSwap(j, nil)
	countEnd(waitFrom)
}

// ensureWorkers starts workers until there are at least n.
func ensureWorkers(n int) {
	if n <= int(started.Load()) {
		return
	}
	startMu.Lock()
	defer startMu.Unlock()
	for int(started.Load()) < n {
		go worker()
		started.Add(1)
	}
}

// worker runs offered parts, spinning for SpinTime after each before it
// parks (at once after a part whose end woke the caller). It remembers
// the last job it saw by its number, not by pointer: a job's function may
// reach a lot of memory (a loaded table), which a pointer kept here would
// keep from the collector until the next Do.
func worker() {
	var seen uint64
	look := newLook()
	for {
		deadline := time.Now().Add(SpinTime())
		spinFrom := countSpin(time.Time{}, false)
		yielded := false
		look.since = time.Time{}
		for spins := 1; ; spins++ {
			if j := current.Load(); j != nil && j.seq != seen {
				seen = j.seq
				countSpin(spinFrom, false)
				if j.claimAndRun(true) {
					spinFrom = countSpin(time.Time{}, false)
					break
				}
				deadline = time.Now().Add(SpinTime())
				spinFrom = countSpin(time.Time{}, false)
				continue
			}
			pause()
			if spins%clockEvery == 0 {
				now := time.Now()
				if now.After(deadline) {
					break
				}
				if spins%(clockEvery*lookEvery) == 0 && look.othersWaiting(now) {
					yielded = true
					break
				}
			}
		}
		countSpin(spinFrom, true)
		if yielded {
			countYield()
		}
		parked.Add(1)
		if j := current.Load(); j != nil && j.seq != seen {
			parked.Add(-1)
			continue
		}
		<-wake
		parked.Add(-1)
	}
}
