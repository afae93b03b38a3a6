package par

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestStatsCountWhatHappened runs a Do whose part 1 a worker must run and
// keeps going 20 ms after the caller's part 0 has returned, then lets the
// worker park, then runs one more Do whose part 1 ends while the caller
// is still busy and lets the worker spin until it parks, then two more Do
// calls, and checks each counter against the test's own clock readings:
// the caller's wait covers part 1's last 20 ms, the worker spun at least
// Spin before parking the second time, the stretch between the second
// and the third Do is at least what the test waited (over Spin, so not a
// short one).
func TestStatsCountWhatHappened(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	// Let the workers of earlier tests park, so that every spin counted
	// starts after Measure.
	for wait := time.Now().Add(5 * time.Second); parked.Load() < started.Load() && time.Now().Before(wait); {
		time.Sleep(time.Millisecond)
	}
	Measure(true)
	defer Measure(false)

	var oneStarted, zeroReturning atomic.Bool
	var zeroReturned, oneEnded time.Time
	deadline := time.Now().Add(5 * time.Second)
	Do(2, func(i int) {
		if i == 1 {
			oneStarted.Store(true)
			for !zeroReturning.Load() && time.Now().Before(deadline) {
				runtime.Gosched()
			}
			time.Sleep(20 * time.Millisecond)
			oneEnded = time.Now()
			return
		}
		for !oneStarted.Load() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		zeroReturned = time.Now()
		zeroReturning.Store(true)
	})
	firstEnd := time.Now()
	got := Read()
	if got.Calls != 1 || got.Parts != 2 || got.WorkerParts != 1 {
		t.Fatalf("after one Do of 2 parts, one on a worker: calls %d, parts %d, worker parts %d", got.Calls, got.Parts, got.WorkerParts)
	}
	if lo, hi := oneEnded.Sub(zeroReturned), firstEnd.Sub(zeroReturned); got.Wait < lo/2 || got.Wait > hi {
		t.Errorf("caller's wait %v; part 1 ended %v after part 0 returned, Do returned %v after", got.Wait, lo, hi)
	}

	// The caller waited longer than Spin, so it parked, and the worker
	// that ended part 1 woke it and parked at once, without spinning.
	for Read().Parks == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for parked.Load() < started.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// A part that ends while the caller is still busy leaves the worker
	// spinning for Spin before it parks.
	parksBefore, spinBefore, yieldsBefore := Read().Parks, Read().Spin, Read().Yields
	if !doWithWorkerPart() {
		t.Fatal("no worker ran part 1 while the caller ran part 0")
	}
	for Read().Parks == parksBefore && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	got = Read()
	// A worker parks early only for a goroutine waiting for a processor
	// (the test's own, readied from its sleep, or the runtime's).
	if spun := got.Spin - spinBefore; got.Parks <= parksBefore || spun < Spin*9/10 && got.Yields == yieldsBefore {
		t.Errorf("after the worker went idle: %d parks (%d early), spun %v, want > %d and ≥ %v", got.Parks, got.Yields, spun, parksBefore, Spin)
	}
	firstEnd = time.Now()

	time.Sleep(2 * Spin) // the first stretch is longer than Spin
	before := time.Now()
	Do(2, func(int) {})
	Do(2, func(int) {})
	got = Read()
	if got.Calls != 4 || got.Parts != 8 || got.Gaps != 3 {
		t.Fatalf("after four Do calls: calls %d, parts %d, gaps %d", got.Calls, got.Parts, got.Gaps)
	}
	if min := before.Sub(firstEnd); got.Between < min {
		t.Errorf("stretches between the calls sum to %v, want ≥ %v (the test's own wait)", got.Between, min)
	}
	if got.ShortGaps > 2 || got.Short > got.Between-before.Sub(firstEnd) || got.Short >= Spin*time.Duration(max(got.ShortGaps, 1)) {
		t.Errorf("short stretches: %d summing to %v (all: %v)", got.ShortGaps, got.Short, got.Between)
	}
}

// TestStatsOffCountsNothing: without Measure(true) the pool counts nothing.
func TestStatsOffCountsNothing(t *testing.T) {
	Measure(false)
	Do(4, func(int) {})
	Do(3, func(int) { time.Sleep(time.Millisecond) })
	if got := Read(); got != (Stats{}) {
		t.Errorf("counted while off: %+v", got)
	}
}

// TestSetSpin: out-of-range spins are refused; with MaxSpin a worker is
// still spinning (not parked) 2 ms after its part unless it made way for
// a waiting goroutine, and with 0 it parks.
func TestSetSpin(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer SetSpin(Spin)
	for _, d := range []time.Duration{-time.Microsecond, MaxSpin + 1} {
		if err := SetSpin(d); err == nil {
			t.Errorf("SetSpin(%v) took it", d)
		}
	}
	if SpinTime() != Spin {
		t.Fatalf("a refused SetSpin changed the spin to %v", SpinTime())
	}
	workerPart := func() {
		if !doWithWorkerPart() {
			t.Fatal("no worker ran part 1 while the caller ran part 0")
		}
	}
	allParked := func(within time.Duration) bool {
		for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
			if parked.Load() == started.Load() {
				return true
			}
		}
		return false
	}
	if err := SetSpin(MaxSpin); err != nil {
		t.Fatal(err)
	}
	// A worker whose thread the OS holds up for longer than the spin ends
	// its part after the caller has parked, and then hands the caller its
	// processor and parks at once: on a loaded machine that can happen,
	// so the check needs one of three tries.
	// A worker also parks early to make way for a goroutine that waits
	// for a processor; on a loaded machine that can be the test's own,
	// readied from its sleep while the OS holds up its thread (counted).
	Measure(true)
	defer Measure(false)
	spun := false
	for try := 0; try < 3 && !spun; try++ {
		yields := Read().Yields
		workerPart()
		spun = !allParked(2*time.Millisecond) || Read().Yields > yields
		allParked(2 * time.Second)
	}
	if !spun {
		t.Errorf("with a spin of %v every worker parked within 2 ms of its part, three times", MaxSpin)
	}
	if err := SetSpin(0); err != nil {
		t.Fatal(err)
	}
	workerPart()
	if !allParked(2 * time.Second) {
		t.Errorf("with a spin of 0 a worker was still not parked 2 s after its part")
	}
}

// TestWorkerMakesWayForAWaitingGoroutine: with the spin at its longest
// (10 ms), a worker that has just run a part spins on one of two
// processors while the test's goroutine holds the other and starts a
// goroutine that needs one. The worker must see it waiting and park long
// before its spin ends (a yield, counted), so the new goroutine runs on
// the worker's processor: before, it waited for the spin's end or for the
// runtime to preempt the test's goroutine, 10 ms each. A worker thread
// that the OS holds up past its deadline parks the ordinary way, so the
// test allows a few tries.
func TestWorkerMakesWayForAWaitingGoroutine(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func(d time.Duration) { _ = SetSpin(d) }(SpinTime())
	if err := SetSpin(MaxSpin); err != nil {
		t.Fatal(err)
	}
	Measure(true)
	defer Measure(false)
	for try := 1; try <= 5; try++ {
		if !doWithWorkerPart() {
			continue
		}
		var ran atomic.Bool
		go func() { ran.Store(true) }()
		// Hold this processor without yielding until the goroutine ran.
		for deadline := time.Now().Add(time.Second); !ran.Load() && time.Now().Before(deadline); {
		}
		if Read().Yields > 0 {
			return
		}
	}
	t.Fatalf("in 5 tries no worker parked early for a goroutine waiting for a processor: %+v", Read())
}
