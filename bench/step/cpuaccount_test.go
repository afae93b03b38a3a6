//go:build unix

package step

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// linkCPUAccount turns on TestLinkCPUAccount and names the folder its
// CPU profiles go to.
var linkCPUAccount = flag.String("link-cpu-account", "", "run TestLinkCPUAccount, writing a CPU profile of each run into this folder")

// linkCPUAccountRuns are the runs of TestLinkCPUAccount, in order: the
// first run of a process faults in the heap's pages, which later runs
// reuse, so a comparison runs each in a process of its own.
var linkCPUAccountRuns = flag.String("link-cpu-account-runs", "loopback,link", "the runs of TestLinkCPUAccount, in order (loopback, link)")

// TestLinkCPUAccount runs issue 30's WAN row (int8, staleness 4, batch
// 1024, a 128-wide cut) over plain loopback (the proxy with no delay or
// bandwidth limit) and over the emulated 20 ms / 100 Mbit/s link, one
// after the other, each under its own CPU profile
// (DIR/loopback.pprof, DIR/link.pprof), and logs the processor time per
// step of each, user and system apart: the accounting of
// docs/methods/wan.md, "Where the link run's processor time went". A
// measurement, not a check: it asserts nothing.
func TestLinkCPUAccount(t *testing.T) {
	if *linkCPUAccount == "" {
		t.Skip("a measurement: run with -link-cpu-account DIR")
	}
	if err := os.MkdirAll(*linkCPUAccount, 0o755); err != nil {
		t.Fatal(err)
	}
	steps, warmup := *plannerSteps, 2
	cfg := plannerConfig(t, steps, warmup)
	links := map[string]linktest.Link{"loopback": {}, "link": plannerLinks[wanLink]}
	for _, name := range strings.Split(*linkCPUAccountRuns, ",") {
		link, ok := links[name]
		if !ok {
			t.Fatalf("-link-cpu-account-runs: run %q, want loopback or link", name)
		}
		run := struct {
			name string
			link linktest.Link
		}{name, link}
		f, err := os.Create(filepath.Join(*linkCPUAccount, run.name+".pprof"))
		if err != nil {
			t.Fatal(err)
		}
		var r0, r1 usage
		var perr error
		timed := func(begin bool) {
			if begin {
				perr = pprof.StartCPUProfile(f)
				r0 = readUsage()
				return
			}
			r1 = readUsage()
			pprof.StopCPUProfile()
		}
		runs, err := MeasureOverLink(context.Background(), LinkSpec{Config: &cfg,
			Encodings: []wire.Encodings{{Embedding: wire.Int8, Gradient: wire.Int8}},
			Schedules: []linkplan.Schedule{{Staleness: 4, LocalSteps: 1}}, Steps: steps, Warmup: warmup, timed: timed}, run.link, run.link)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = perr
		}
		if err != nil {
			t.Fatal(err)
		}
		s, n := runs[0].Split, time.Duration(steps)
		d := r1.minus(r0)
		t.Logf("%s: the link idle %.1f ms per step up, %.1f down", run.name, ms(runs[0].UpIdle), ms(runs[0].DownIdle))
		t.Logf("%s: step %.1f ms, processor time %.1f ms per timed step (user %.1f, system %.1f; %.2f cores); per step %.0f page faults, %.2f collections, %.0f KiB allocated in %.0f objects, %.0f voluntary and %.0f forced context switches; load %s",
			run.name, ms(s.Step), ms(s.CPU), ms(d.user/n), ms(d.sys/n), float64(s.CPU)/float64(s.Step),
			float64(d.faults)/float64(n), float64(d.gcs)/float64(n), float64(d.alloc)/1024/float64(n), float64(d.objects)/float64(n),
			float64(d.vcsw)/float64(n), float64(d.ivcsw)/float64(n), loadAverage())
	}
}

// usage is what this process has used so far: processor time (user,
// system), minor page faults, context switches (voluntary, forced) and
// the Go runtime's collections and allocations.
type usage struct {
	user, sys           time.Duration
	faults, vcsw, ivcsw int64
	gcs, alloc, objects uint64
}

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(fmt.Sprint("getrusage: ", err))
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return usage{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()),
		faults: ru.Minflt, vcsw: ru.Nvcsw, ivcsw: ru.Nivcsw,
		gcs: uint64(m.NumGC), alloc: m.TotalAlloc, objects: m.Mallocs}
}

func (u usage) minus(o usage) usage {
	return usage{user: u.user - o.user, sys: u.sys - o.sys, faults: u.faults - o.faults, vcsw: u.vcsw - o.vcsw,
		ivcsw: u.ivcsw - o.ivcsw, gcs: u.gcs - o.gcs, alloc: u.alloc - o.alloc, objects: u.objects - o.objects}
}
