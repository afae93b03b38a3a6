package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDoRunsEachPartOnce checks that every part runs exactly once, for
// counts below, at and above the workers available.
func TestDoRunsEachPartOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 64, 200} {
		counts := make([]atomic.Int32, max(n, 1))
		var callerRanZero bool
		done := make(chan struct{})
		go func() {
			defer close(done)
			Do(n, func(i int) {
				counts[i].Add(1)
				if i == 0 {
					callerRanZero = true // written on the caller's goroutine only
				}
			})
		}()
		<-done
		for i := range n {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: part %d ran %d times", n, i, c)
			}
		}
		if n > 0 && !callerRanZero {
			t.Fatalf("n=%d: part 0 did not run", n)
		}
	}
}

// TestDoConcurrentAndNested checks that Do returns and gives every
// part's writes to its caller when calls overlap from many goroutines and
// nest, with the race detector watching (go test -race).
func TestDoConcurrentAndNested(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for rep := range 50 {
				out := make([]int, 6)
				Do(len(out), func(i int) {
					inner := make([]int, 3)
					Do(len(inner), func(k int) { inner[k] = k + 1 })
					out[i] = (inner[0]+inner[1]+inner[2])*(i+1) + g + rep
				})
				for i, v := range out {
					if want := 6*(i+1) + g + rep; v != want {
						t.Errorf("goroutine %d, rep %d: part %d wrote %d, want %d", g, rep, i, v, want)
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestWorkersRunPartsInParallel checks that a worker takes a part while
// the caller is busy with part 0: part 1 waits for part 0 to start and
// part 0 waits for part 1, which completes only if they run at once.
func TestWorkersRunPartsInParallel(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS ≥ 2")
	}
	if !doWithWorkerPart() {
		t.Fatal("no worker ran part 1 while the caller ran part 0")
	}
}

// doWithWorkerPart runs a Do of 2 parts whose part 0 waits (up to 5 s)
// for part 1 to run, and reports whether it did: whether another
// goroutine, a worker, ran part 1 while the caller ran part 0.
func doWithWorkerPart() bool {
	var oneRan, sawOne atomic.Bool
	deadline := time.Now().Add(5 * time.Second)
	Do(2, func(i int) {
		if i == 1 {
			oneRan.Store(true)
			return
		}
		for !oneRan.Load() && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		sawOne.Store(oneRan.Load())
	})
	return sawOne.Load()
}

func BenchmarkDo2(b *testing.B) {
	var sink [2]int
	for b.Loop() {
		Do(2, func(i int) { sink[i]++ })
	}
}

// TestDoKeepsNothingAlive: once Do returns, nothing in the pool reaches
// its function (a closure over a loaded table, say) any more, so the
// collector can free what the function captured.
func TestDoKeepsNothingAlive(t *testing.T) {
	freed := make(chan struct{})
	func() {
		big := make([]byte, 1<<20)
		runtime.AddCleanup(&big[0], func(ch chan struct{}) { close(ch) }, freed)
		Do(4, func(i int) {
			big[i]++
			time.Sleep(100 * time.Microsecond) // let the workers claim parts
		})
	}()
	for range 50 {
		runtime.GC()
		select {
		case <-freed:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("memory captured by a finished Do's function was not freed")
}
