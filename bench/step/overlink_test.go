package step

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// plannerLinks are the emulated links of the planner's check: a long,
// slow one whose share of a step is large enough that a loaded machine's
// compute noise does not decide the result, and issue 30's WAN.
var plannerLinks = map[string]linktest.Link{
	"100ms/10Mbit": {Delay: 50 * time.Millisecond, BytesPerSecond: linktest.Mbit(10)},
	"20ms/100Mbit": {Delay: 10 * time.Millisecond, BytesPerSecond: linktest.Mbit(100)},
}

// plannerOptions are the options the planner's check covers, each over
// one of plannerLinks: the encodings in the synchronous protocol,
// staleness k = 1, 2, 4 and Q = 2 local steps over the slow link, and
// the setting docs/methods/wan.md recommends for a WAN (int8, k = 4)
// beside its synchronous step over issue 30's 20 ms / 100 Mbit/s, the
// same two in int4 (half int8's bytes of values), and int4 with k = 4 and
// Q = 2, and k = 6 with Q = 1 and 2 (the WAN options of docs/DEPLOYMENT.md).
var plannerOptions = []struct {
	link                  string
	enc                   wire.Encoding
	staleness, localSteps int
}{
	{"100ms/10Mbit", wire.F32, 0, 1}, {"100ms/10Mbit", wire.BF16, 0, 1}, {"100ms/10Mbit", wire.Int8, 0, 1},
	{"100ms/10Mbit", wire.Int8, 1, 1}, {"100ms/10Mbit", wire.Int8, 2, 1}, {"100ms/10Mbit", wire.Int8, 4, 1},
	{"100ms/10Mbit", wire.Int8, 0, 2},
	{"20ms/100Mbit", wire.Int8, 0, 1}, {"20ms/100Mbit", wire.Int8, 4, 1},
	{"20ms/100Mbit", wire.Int4, 0, 1}, {"20ms/100Mbit", wire.Int4, 4, 1},
	{"20ms/100Mbit", wire.Int4, 4, 2}, {"20ms/100Mbit", wire.Int4, 6, 1}, {"20ms/100Mbit", wire.Int4, 6, 2},
}

// plannerCheck turns on TestPlannerPredictsLink: it asserts measured
// times, which a loaded machine can push past its tolerance, so the
// default test run (and CI) leaves it out.
var plannerCheck = flag.Bool("planner-check", false, "run TestPlannerPredictsLink, the planner's timing check against emulated links")

// plannerCPUProcs measures the processor times of TestPlannerPredictsLink
// under another GOMAXPROCS than the process's own (a comparison: with 1,
// internal/par's idle workers do not spin and the spinning is not
// counted).
var plannerCPUProcs = flag.Int("planner-cpu-procs", 0, "GOMAXPROCS under which TestPlannerPredictsLink measures processor times (0: the process's own, as the run)")

// plannerSteps is the least number of timed steps of each row of
// TestPlannerPredictsLink (more steps: a steadier median, and a trace
// with more of the run in it); a row times at least plannerSeconds of
// round trips too (rowSteps).
var plannerSteps = flag.Int("planner-steps", 10, "least timed steps of each row of TestPlannerPredictsLink (a row times at least 2 s of its link's round trips)")

// plannerSeconds is the least time of round trips each row times: ten
// steps of a 20 ms link are 110 ms of wire, in which the pipeline's
// start and the wire's pacing granularity weigh a third of the step
// (measured 15.5–15.7 ms against 11.6–12.2 over 200 steps, the
// prediction 11.1).
const plannerSeconds = 2.0

// rowSteps are the timed and the warm-up steps of a row over a link of
// round trip rtt with staleness k: at least plannerSteps and
// plannerSeconds of round trips, after 2 + k steps that fill the
// pipeline.
func rowSteps(rtt time.Duration, k int) (steps, warmup int) {
	return max(*plannerSteps, int(math.Ceil(plannerSeconds/rtt.Seconds()))), 2 + k
}

// plannerParSpin is internal/par's spin during TestPlannerPredictsLink
// (par.SetSpin), for comparisons.
var plannerParSpin = flag.Duration("planner-par-spin", par.Spin, "internal/par's spin during TestPlannerPredictsLink")

// TestPlannerPredictsLink checks the link planner against a measurement:
// the costs of the step measured as `plan-link` measures them just
// before each row (both parties in process; the transport's overhead
// through the same proxy with its delay and bandwidth off) and the model
// of transport/linkplan predict the time of a step over a link emulated
// by transport/linktest, and the two parties, connected by grpcnet with
// mutual TLS through it and running the row's schedule (staleness, local
// steps), take that time within 20% (medians of 10 steps after 2 of
// warm-up; with staleness k the median over runs of k+1 answers of their
// mean spacing). Over the 100 ms / 10 Mbit/s link the link's share is
// most of a step (about 320 ms for int8, 800 ms for f32). The parties,
// the transport and the proxy all run in this process, so the prediction
// takes them as sharing the cores free for it (linkplan.Costs.SharedCores:
// measured just before the run, LinkRun.FreeCores, since on a shared
// machine other processes take part of them; processor times measured
// under the process's GOMAXPROCS, as the run, the transport's through the
// proxy): every row is asserted.
// The measured split of each run, the load average and the prediction
// with all GOMAXPROCS cores free are logged. About a
// minute on two cores. Run one row with -run 'TestPlannerPredictsLink/20ms/.*k=4'.
func TestPlannerPredictsLink(t *testing.T) {
	if !*plannerCheck {
		t.Skip("a timing check (about a minute): run with -planner-check")
	}
	if *plannerCPUProcs < 0 {
		t.Fatalf("-planner-cpu-procs %d, want 0 (the process's own) or more", *plannerCPUProcs)
	}
	if *plannerSteps < 1 {
		t.Fatalf("-planner-steps %d, want 1 or more", *plannerSteps)
	}
	defer func(n int) { cpuProcs = n }(cpuProcs)
	cpuProcs = *plannerCPUProcs
	defer par.SetSpin(par.SpinTime())
	if err := par.SetSpin(*plannerParSpin); err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, o := range plannerOptions {
		steps, warmup := rowSteps(2*plannerLinks[o.link].Delay, o.staleness)
		most = max(most, steps+warmup)
	}
	cfg := plannerConfig(t, most, 0)
	var table []plannerRow
	for _, o := range plannerOptions {
		name := fmt.Sprintf("%s %s k=%d Q=%d", o.link, o.enc, o.staleness, o.localSteps)
		t.Run(name, func(t *testing.T) {
			dir := plannerLinks[o.link]
			link := linkplan.Link{RTT: 2 * dir.Delay, Up: dir.BytesPerSecond, Down: dir.BytesPerSecond}
			steps, warmup := rowSteps(link.RTT, o.staleness)
			row := checkPlannerRow(t, &cfg, link, dir, wire.Encodings{Embedding: o.enc, Gradient: o.enc},
				linkplan.Schedule{Staleness: o.staleness, LocalSteps: o.localSteps}, steps, warmup, o.link == wanLink)
			row.name = name
			table = append(table, row)
		})
	}
	t.Log(plannerTable(table))
}

// plannerConfig is the run of the planner's check: an MLP 128-128-128
// cut after the second layer, batch 1024, no protection, on synthetic
// rows enough for steps timed steps after warmup.
func plannerConfig(t *testing.T, steps, warmup int) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Model, cfg.Layers, cfg.Cut, cfg.Batch, cfg.Out = "mlp", []int{128, 128, 128}, 2, 1024, "unused"
	cfg.Protect, cfg.Params = "none", nil
	cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop, cfg.ValFrac = false, 0, 0, 0
	cfg.SynthRows = (steps+warmup+2)*cfg.Batch*10/9 + cfg.Batch
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// wanLink is issue 30's link, whose rows the check also runs over plain
// loopback (through the proxy with no delay or bandwidth limit) to give
// the link's step against loopback's.
const wanLink = "20ms/100Mbit"

// plannerRow is one row's figures for the closing table.
type plannerRow struct {
	name                string
	bound               string
	predicted, measured float64 // ms per step
	loopback            float64 // ms per step on loopback, 0 where not measured
	free                float64 // cores free before the run
	load                string
}

// plannerTable formats the rows of a planner check as a Markdown table.
func plannerTable(rows []plannerRow) string {
	var b strings.Builder
	b.WriteString("\n| row | bound | predicted ms | measured ms | off | loopback ms | link ÷ loopback | cores free | load average |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		lb, ratio := "—", "—"
		if r.loopback > 0 {
			lb, ratio = fmt.Sprintf("%.1f", r.loopback), fmt.Sprintf("%.2f", r.measured/r.loopback)
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %+.0f%% | %s | %s | %.2f | %s |\n",
			r.name, r.bound, r.predicted, r.measured, 100*(r.predicted/r.measured-1), lb, ratio, r.free, r.load)
	}
	return b.String()
}

// checkPlannerRow measures the costs of cfg's step in encodings enc,
// then its steps under schedule sc over the link emulated by dir each
// way, and fails when the prediction for link is more than 20% off the
// measured step. With loopback it also measures the same steps through
// the proxy with no delay or bandwidth limit (logged, not asserted).
func checkPlannerRow(t *testing.T, cfg *config.Config, link linkplan.Link, dir linktest.Link, enc wire.Encodings, sc linkplan.Schedule, steps, warmup int, loopback bool) plannerRow {
	ctx := context.Background()
	// The costs just before the run: a loaded machine's speed drifts
	// from minute to minute.
	costs, err := MeasureLink(ctx, LinkSpec{Config: cfg, Encodings: []wire.Encodings{enc}, Steps: steps, Warmup: warmup})
	if err != nil {
		t.Fatal(err)
	}
	load := loadAverage()
	runs, err := MeasureOverLink(ctx, LinkSpec{Config: cfg, Encodings: []wire.Encodings{enc}, Schedules: []linkplan.Schedule{sc}, Steps: steps, Warmup: warmup}, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, r := costs[0].Costs, runs[0]
	// Both parties, the transport and the proxy share the cores free for
	// this process just before the run (LinkRun.FreeCores); the
	// transport's costs are those through the proxy.
	c.SharedCores, c.Overhead, c.CPU.Transport = r.FreeCores, r.Overhead, r.OverheadCPU
	p, err := linkplan.Predict(link, c, sc)
	if err != nil {
		t.Fatal(err)
	}
	whole := c
	whole.SharedCores = float64(SharedCores())
	pw, err := linkplan.Predict(link, whole, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Split
	t.Logf("load average %s before the run; %.2f of %d cores free (obtained by as many computing goroutines for 200 ms); with all %d free the prediction would be %.1f ms/step (%s)",
		load, r.FreeCores, SharedCores(), SharedCores(), ms(pw.PerExchange), pw.Bound)
	t.Logf("predicted %.1f ms/step, bound %s (passive %.1f, recompute %.1f, active %.1f, overhead through the proxy %.1f; processor time passive %.1f, recompute %.1f, active %.1f, transport and proxy %.1f, on %.2f cores; %d+%d bytes); measured %.1f ms/step (passive compute %.1f, active compute %.1f, link %.1f; processor time %.1f per step; the link idle %.1f ms per step up, %.1f down)",
		ms(p.PerExchange), p.Bound, ms(c.Passive), ms(c.Recompute), ms(c.Active), ms(c.Overhead),
		ms(c.CPU.Passive), ms(c.CPU.Recompute), ms(c.CPU.Active), ms(c.CPU.Transport), c.SharedCores, c.Forward, c.Backward,
		ms(s.Step), ms(s.Passive), ms(s.Active), ms(s.Link), ms(s.CPU), ms(r.UpIdle), ms(r.DownIdle))
	if r.Forward != c.Forward || r.Backward != c.Backward {
		t.Errorf("%d+%d bytes per step over the link, %d+%d in process", r.Forward, r.Backward, c.Forward, c.Backward)
	}
	if rel := math.Abs(ms(p.PerExchange)-ms(s.Step)) / ms(s.Step); rel > 0.2 {
		t.Errorf("predicted %.1f ms/step, measured %.1f: %.0f%% off, want within 20%%", ms(p.PerExchange), ms(s.Step), 100*rel)
	}
	row := plannerRow{bound: string(p.Bound), predicted: ms(p.PerExchange), measured: ms(s.Step), free: r.FreeCores, load: load}
	if loopback {
		lb, err := MeasureOverLink(ctx, LinkSpec{Config: cfg, Encodings: []wire.Encodings{enc}, Schedules: []linkplan.Schedule{sc}, Steps: steps, Warmup: warmup}, linktest.Link{}, linktest.Link{})
		if err != nil {
			t.Fatal(err)
		}
		row.loopback = ms(lb[0].Split.Step)
		t.Logf("on loopback (the proxy with no delay or bandwidth limit): %.1f ms/step; the link's step is %.2f× loopback's (issue 30 asks at most 1.25×; not asserted)", row.loopback, row.measured/row.loopback)
	}
	return row
}

// loadAverage is the machine's load averages over 1, 5 and 15 minutes
// as /proc/loadavg gives them, or why not.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
