package step

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// LinkSpec is what the link planner measures: the run cfg describes
// (model, batch, cut, protection, data; its wire keys are replaced by
// each of Encodings in turn), Steps timed training steps after Warmup
// untimed ones. Schedules are the staleness and local steps
// MeasureOverLink runs each encoding under (none: the synchronous
// protocol only); MeasureLink measures the synchronous step, whose costs
// the planner's model scales to every schedule.
type LinkSpec struct {
	Config        *config.Config
	Encodings     []wire.Encodings
	Schedules     []linkplan.Schedule
	Steps, Warmup int

	// timed, when set (by a test), is called with true when the timed
	// steps begin (the answer that ends the warm-up) and with false when
	// they end (their last answer): the span Split.CPU covers.
	timed func(begin bool)
	// idle, when set (MeasureOverLink), returns the emulated link's idle
	// time so far, each way (linktest.Proxy.Idle).
	idle func() (up, down time.Duration)
}

// synchronous is the exact protocol's schedule: k = 0, Q = 1.
var synchronous = linkplan.Schedule{Staleness: 0, LocalSteps: 1}

// LinkCosts are the measured costs of a step in one pair of encodings.
type LinkCosts struct {
	Wire  wire.Encodings
	Costs linkplan.Costs
}

// MeasureLink measures, for each pair of encodings, what the link planner
// needs (linkplan.Costs): both parties in this process over the in-memory
// transport give the medians of the passive's compute per step (from the
// answer of one exchange to the next exchange: backward, update, next
// forward and its rounding) and the active's (the exchange itself: top,
// protection, rounding, update), the median forward of the bottom on one
// batch (the recompute of a pipelined schedule), and the mean bytes per
// step each way as
// grpcnet encodes the messages (grpcnet.WireBytes); then the messages of
// the last step are exchanged again over grpcnet with mutual TLS on
// loopback against an active that answers at once, whose median time is
// the transport's overhead per exchange. The processor times (Costs.CPU)
// are measured by processorTimes.
func MeasureLink(ctx context.Context, spec LinkSpec) ([]LinkCosts, error) {
	spec, train, dir, err := spec.prepare("link measurement")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := make([]LinkCosts, 0, len(spec.Encodings))
	for _, enc := range spec.Encodings {
		r, err := timedRun(ctx, spec, enc, synchronous, train, inprocPair)
		if err != nil {
			return nil, fmt.Errorf("step: link measurement, %v/%v: %w", enc.Embedding, enc.Gradient, err)
		}
		c := LinkCosts{Wire: enc, Costs: r.costs(spec)}
		if c.Costs.Overhead, _, err = loopbackOverhead(ctx, dir, enc, r.conn, spec, false); err != nil {
			return nil, fmt.Errorf("step: transport overhead, %v/%v: %w", enc.Embedding, enc.Gradient, err)
		}
		if c.Costs.CPU, err = processorTimes(ctx, spec, enc, train, dir); err != nil {
			return nil, fmt.Errorf("step: processor times, %v/%v: %w", enc.Embedding, enc.Gradient, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// processorTimes measures the processor time of each part of a step
// (linkplan.CPUTimes): the same synchronous steps in process and the same
// exchanges over grpcnet on loopback as MeasureLink times, run again
// (under GOMAXPROCS cpuProcs where that is set, restored after; nothing
// else should run in the process meanwhile). Each part's processor time
// is the mean over the timed steps of this process's processor time
// (getrusage(2)) while it runs: the passive's compute, the active's, a
// forward of the bottom, an exchange (both ends). Means, not medians:
// the garbage collector's work lands in a few steps and is work all the
// same. Under the process's own GOMAXPROCS (the default), the idle
// workers of internal/par spin for up to 300 µs after each part of a
// product, as they do in a run, and that spinning counts: it takes
// processor time from whatever else shares the machine (on the shared
// 2-core machine, 3.7 ms of the WAN row's 18.5 ms per step in a profile,
// docs/methods/wan.md "Where the link run's processor time went"). With
// cpuProcs 1 the parts run in turn and the figure is the work alone.
// Zero times where the system does not give processor time.
func processorTimes(ctx context.Context, spec LinkSpec, enc wire.Encodings, train *data.Dataset, dir string) (linkplan.CPUTimes, error) {
	if _, ok := processCPU(); !ok {
		return linkplan.CPUTimes{}, nil
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cpuProcs))
	r, err := timedRun(ctx, spec, enc, synchronous, train, inprocPair)
	if err != nil {
		return linkplan.CPUTimes{}, err
	}
	cpu := r.costs(spec).CPU
	if _, cpu.Transport, err = loopbackOverhead(ctx, dir, enc, r.conn, spec, false); err != nil {
		return linkplan.CPUTimes{}, err
	}
	return cpu, nil
}

// prepare checks spec, loads its data and resolves the settings that
// follow from it (the returned spec holds the resolved copy), and makes
// a CA and the parties' certificates in a new temporary directory, which
// the caller removes. what names the measurement in errors.
func (spec LinkSpec) prepare(what string) (LinkSpec, *data.Dataset, string, error) {
	if spec.Steps < 1 || spec.Warmup < 0 || spec.Config == nil || len(spec.Encodings) == 0 {
		return spec, nil, "", fmt.Errorf("step: %s: %d steps (want ≥ 1), warm-up %d (want ≥ 0), %d encodings (want ≥ 1)", what, spec.Steps, spec.Warmup, len(spec.Encodings))
	}
	split, err := spec.Config.LoadData()
	if err != nil {
		return spec, nil, "", fmt.Errorf("step: %s: %w", what, err)
	}
	split.SortByID()
	cfg := *spec.Config
	cfg.ResolveForData(len(split.Train.IDs))
	spec.Config = &cfg
	dir, err := os.MkdirTemp("", "splitguard-link-")
	if err != nil {
		return spec, nil, "", err
	}
	if err := issueLoopbackPKI(dir); err != nil {
		os.RemoveAll(dir)
		return spec, nil, "", err
	}
	return spec, split.Train, dir, nil
}

// issueLoopbackPKI makes a CA and the two parties' certificates in dir.
func issueLoopbackPKI(dir string) error {
	if err := pki.InitCA(dir, pki.CAOptions{}); err != nil {
		return err
	}
	for _, n := range []string{"active", "passive"} {
		if _, _, err := pki.Issue(dir, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			return err
		}
	}
	return nil
}

// loopbackOverhead exchanges the last training messages t kept again and
// again over grpcnet with mutual TLS on loopback (through a linktest
// proxy without delay or bandwidth limit when viaProxy), the active
// answering each at once with the kept gradient, and returns the median
// time of an exchange, what the transport itself costs per step, and the
// mean processor time of an exchange (both ends and the proxy).
func loopbackOverhead(ctx context.Context, dir string, enc wire.Encodings, t *timedConn, spec LinkSpec, viaProxy bool) (wall, cpu time.Duration, err error) {
	st, err := pki.ServerTLSConfig(pki.FilesIn(dir, "active"), "passive")
	if err != nil {
		return 0, 0, err
	}
	ct, err := pki.ClientTLSConfig(pki.FilesIn(dir, "passive"), "active")
	if err != nil {
		return 0, 0, err
	}
	quiet := slog.New(slog.DiscardHandler)
	fp := transport.Fingerprint{Wire: enc}
	s, err := grpcnet.Listen("127.0.0.1:0", grpcnet.ServerOptions{TLS: st, Local: transport.Hello{Party: "active", Config: fp}, Logger: quiet})
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	addr := s.Addr()
	if viaProxy {
		px, err := linktest.Start(addr, linktest.Link{}, linktest.Link{})
		if err != nil {
			return 0, 0, err
		}
		defer px.Close()
		addr = px.Addr()
	}
	c, err := grpcnet.Dial(addr, grpcnet.ClientOptions{TLS: ct, Logger: quiet})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if _, err := c.Hello(ctx, transport.Hello{Party: "passive", Config: fp}); err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			f, err := s.Recv(ctx)
			if err != nil {
				return
			}
			if err := s.Reply(ctx, &transport.Backward{Step: f.Step, Batch: f.Batch, Grad: t.lastB.Grad}); err != nil {
				return
			}
		}
	}()
	f := t.lastF
	times := make([]float64, 0, spec.Steps)
	var cpu0 time.Duration
	for i := range spec.Warmup + spec.Steps {
		f.Step, f.Batch = int64(i), i
		if i == spec.Warmup {
			cpu0 = cpuNow()
		}
		start := time.Now()
		if _, err := c.Exchange(ctx, &f); err != nil {
			return 0, 0, err
		}
		if i >= spec.Warmup {
			times = append(times, float64(time.Since(start).Nanoseconds()))
		}
	}
	if len(times) == 0 {
		return 0, 0, errors.New("no exchange timed")
	}
	return time.Duration(Median(times)), (cpuNow() - cpu0) / time.Duration(len(times)), nil
}
