package step

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// LinkRun is one encoding's training steps under one schedule over an
// emulated link.
type LinkRun struct {
	Wire     wire.Encodings
	Schedule linkplan.Schedule
	// Split are the medians of the timed steps: the step, each party's
	// compute and the rest of the exchange.
	Split Split
	// Forward and Backward are the mean bytes per step each way
	// (grpcnet.WireBytes).
	Forward, Backward int64
	// Overhead is the transport's own time per exchange as the run's
	// parties meet it: the run's last messages exchanged through the same
	// proxy with its delay and bandwidth limit off (its copying
	// included), median; the check's prediction uses it in place of
	// MeasureLink's direct loopback figure. OverheadCPU is the mean
	// processor time of those exchanges (both ends and the proxy) on one
	// core, in place of MeasureLink's Costs.CPU.Transport (see
	// MeasureLink); 0 where the system does not give processor time.
	Overhead, OverheadCPU time.Duration
	// FreeCores are the cores free for this process just before the run
	// (FreeCores), what the parties, the transport and the proxy then
	// share (linkplan.Costs.SharedCores); 0 where the system does not
	// give processor time.
	FreeCores float64
	// UpIdle and DownIdle are the time per timed step each direction of
	// the emulated link had nothing to carry (linktest.Proxy.Idle): where
	// a run is bound by a link's bandwidth, idle time is what the parties
	// failed to hand it. Without a bandwidth limit they count every gap
	// between reads.
	UpIdle, DownIdle time.Duration
}

// MeasureOverLink trains the steps of spec, for each pair of encodings
// and each of spec.Schedules in turn (encoding-major; none: the
// synchronous protocol), with the two parties in this process connected by grpcnet with mutual
// TLS through an emulated link (transport/linktest: up carries the
// passive's messages, down the active's answers), and returns the medians
// of the timed steps: what the planner's prediction is checked against.
func MeasureOverLink(ctx context.Context, spec LinkSpec, up, down linktest.Link) ([]LinkRun, error) {
	spec, train, dir, err := spec.prepare("link run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	scheds := spec.Schedules
	if len(scheds) == 0 {
		scheds = []linkplan.Schedule{synchronous}
	}
	var out []LinkRun
	for _, enc := range spec.Encodings {
		for _, sc := range scheds {
			free := FreeCores(200 * time.Millisecond)
			var r *runTimes
			var px *linktest.Proxy
			spec.idle = func() (time.Duration, time.Duration) { return px.Idle() }
			// The run's span in an execution trace (go test -trace):
			// scripts/trace-sched.py keeps to it; and its goroutines'
			// label in a CPU profile (-tagfocus run=link).
			pprof.Do(ctx, pprof.Labels("run", "link", "over", linkName(up, down)), func(ctx context.Context) {
				trace.WithRegion(ctx, "link run", func() {
					r, err = timedRun(ctx, spec, enc, sc, train, linkPair(dir, up, down, &px))
				})
			})
			if err != nil {
				return nil, fmt.Errorf("step: link run, %v/%v, staleness %d, %d local steps: %w", enc.Embedding, enc.Gradient, sc.Staleness, sc.LocalSteps, err)
			}
			c := r.costs(spec)
			o, _, err := loopbackOverhead(ctx, dir, enc, r.conn, spec, true)
			if err != nil {
				return nil, fmt.Errorf("step: transport overhead through the proxy, %v/%v: %w", enc.Embedding, enc.Gradient, err)
			}
			oCPU, err := proxiedTransportCPU(ctx, dir, enc, r.conn, spec)
			if err != nil {
				return nil, fmt.Errorf("step: transport processor time through the proxy, %v/%v: %w", enc.Embedding, enc.Gradient, err)
			}
			at, n := r.conn.idleAt, time.Duration(spec.Steps)
			out = append(out, LinkRun{Wire: enc, Schedule: sc, Split: r.split(spec), Forward: c.Forward, Backward: c.Backward, Overhead: o, OverheadCPU: oCPU, FreeCores: free,
				UpIdle: (at[1][0] - at[0][0]) / n, DownIdle: (at[1][1] - at[0][1]) / n})
		}
	}
	return out, nil
}

// linkName names an emulated link in a CPU profile's labels (-tagfocus
// over=loopback): "loopback" where neither direction delays or limits.
func linkName(up, down linktest.Link) string {
	if up.Delay == 0 && up.BytesPerSecond == 0 && down.Delay == 0 && down.BytesPerSecond == 0 {
		return "loopback"
	}
	return fmt.Sprintf("%v/%gMbit", up.Delay+down.Delay, up.BytesPerSecond*8/1e6)
}

// proxiedTransportCPU is the mean processor time of an exchange of t's
// last messages through a linktest proxy without delay or bandwidth
// limit, under GOMAXPROCS cpuProcs where that is set (as
// processorTimes); 0 where the system does not give processor time.
func proxiedTransportCPU(ctx context.Context, dir string, enc wire.Encodings, t *timedConn, spec LinkSpec) (time.Duration, error) {
	if _, ok := processCPU(); !ok {
		return 0, nil
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cpuProcs))
	_, cpu, err := loopbackOverhead(ctx, dir, enc, t, spec, true)
	return cpu, err
}

// FreeCores runs SharedCores goroutines that compute for d and returns
// the processor time this process got per second of wall time: the cores
// the machine had free for it then (SharedCores at most, fewer where
// other processes compete for them); 0 where the system does not give
// processor time.
func FreeCores(d time.Duration) float64 {
	n := SharedCores()
	if n < 1 {
		return 0
	}
	start, c0 := time.Now(), cpuNow()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := 1.0
			for time.Since(start) < d {
				for range 1000 {
					x = x*1.0000001 + 1e-9
				}
			}
			freeSink.Store(int64(x))
		})
	}
	wg.Wait()
	return float64(cpuNow()-c0) / float64(time.Since(start))
}

// freeSink keeps FreeCores' loops from being optimised away.
var freeSink atomic.Int64

// SharedCores is the number of cores the parties, the transport and the
// link proxy of a check over an emulated link share
// (linkplan.Costs.SharedCores): all run in this process, which runs Go
// code on at most GOMAXPROCS cores at once. 0 where the system does not
// give processor time (the costs then have none to share).
func SharedCores() int {
	if _, ok := processCPU(); !ok {
		return 0
	}
	return runtime.GOMAXPROCS(0)
}

// linkPair connects the parties by grpcnet with mutual TLS (certificates
// in dir) through a linktest proxy emulating up and down, both ends
// opened for a pipeline of the given depth, and sets *proxy to the
// proxy.
func linkPair(dir string, up, down linktest.Link, proxy **linktest.Proxy) pairFunc {
	return func(ctx context.Context, enc wire.Encodings, depth int) (transport.PassiveConn, transport.ActiveConn, func(), error) {
		st, err := pki.ServerTLSConfig(pki.FilesIn(dir, "active"), "passive")
		if err != nil {
			return nil, nil, nil, err
		}
		ct, err := pki.ClientTLSConfig(pki.FilesIn(dir, "passive"), "active")
		if err != nil {
			return nil, nil, nil, err
		}
		quiet := slog.New(slog.DiscardHandler)
		fp := transport.Fingerprint{Wire: enc}
		s, err := grpcnet.Listen("127.0.0.1:0", grpcnet.ServerOptions{TLS: st, Local: transport.Hello{Party: "active", Config: fp}, Logger: quiet, PipelineDepth: depth})
		if err != nil {
			return nil, nil, nil, err
		}
		px, err := linktest.Start(s.Addr(), up, down)
		if err != nil {
			s.Close()
			return nil, nil, nil, err
		}
		*proxy = px
		c, err := grpcnet.Dial(px.Addr(), grpcnet.ClientOptions{TLS: ct, Logger: quiet, PipelineDepth: depth})
		if err != nil {
			px.Close()
			s.Close()
			return nil, nil, nil, err
		}
		release := func() {
			c.Close()
			px.Close()
			s.Close()
		}
		if _, err := c.Hello(ctx, transport.Hello{Party: "passive", Config: fp}); err != nil {
			release()
			return nil, nil, nil, err
		}
		return c, s, release, nil
	}
}
