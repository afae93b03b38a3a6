package step

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/transport/linkplan"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// plannerOptions are the options the planner's check covers. Rows with
// staleness or local steps wait for those schedules to be configurable
// (issue 30, item 2) and are skipped until then.
var plannerOptions = []struct {
	enc                   wire.Encoding
	staleness, localSteps int
}{
	{wire.F32, 0, 1}, {wire.BF16, 0, 1}, {wire.Int8, 0, 1},
	{wire.Int8, 1, 1}, {wire.Int8, 2, 1}, {wire.Int8, 0, 2},
}

// schedulesConfigurable says whether the parties can run a staleness
// above 0 or more than one local step; the rows that need them are
// skipped while it is false. Turning it on needs timedRun to give the
// parties the row's schedule and MeasureOverLink to take it.
const schedulesConfigurable = false

// TestPlannerPredictsLink checks the link planner against a measurement:
// the costs of the step measured as `plan-link` measures them (both
// parties in process, the transport's overhead over loopback TLS) and the
// model of transport/linkplan predict the time of a step over a link
// emulated by transport/linktest (100 ms round trip, 10 Mbit/s each way),
// and the two parties, connected by grpcnet with mutual TLS through it,
// take that time within 20% (medians of 6 steps after 2 of warm-up). The
// link's share is most of a step (about 320 ms for int8, 800 ms for f32),
// so that the noise of a loaded machine's compute does not decide it.
// The measured split of each run is logged. About 20 s on two cores.
func TestPlannerPredictsLink(t *testing.T) {
	if testing.Short() {
		t.Skip("runs training steps over an emulated 100 ms link (about 20 s)")
	}
	cfg := config.Default()
	cfg.Model, cfg.Layers, cfg.Cut, cfg.Batch, cfg.Out = "mlp", []int{128, 128, 128}, 2, 1024, "unused"
	cfg.Protect, cfg.Params = "none", nil
	cfg.Baseline, cfg.EvalEvery, cfg.EarlyStop, cfg.ValFrac = false, 0, 0, 0
	const steps, warmup = 6, 2
	cfg.SynthRows = (steps+warmup+2)*cfg.Batch*10/9 + cfg.Batch
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	dir := linktest.Link{Delay: 50 * time.Millisecond, BytesPerSecond: linktest.Mbit(10)}
	link := linkplan.Link{RTT: 2 * dir.Delay, Up: dir.BytesPerSecond, Down: dir.BytesPerSecond}
	var encs []wire.Encodings
	for _, o := range plannerOptions {
		if o.staleness == 0 && o.localSteps == 1 {
			encs = append(encs, wire.Encodings{Embedding: o.enc, Gradient: o.enc})
		}
	}
	spec := LinkSpec{Config: &cfg, Encodings: encs, Steps: steps, Warmup: warmup}
	ctx := context.Background()
	costs, err := MeasureLink(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := MeasureOverLink(ctx, spec, dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range plannerOptions {
		name := o.enc.String()
		if o.staleness > 0 || o.localSteps > 1 {
			if !schedulesConfigurable {
				t.Logf("%s, k=%d, Q=%d: skipped: staleness and local steps are not configurable yet (issue 30, item 2)", name, o.staleness, o.localSteps)
				continue
			}
		}
		var c linkplan.Costs
		var r LinkRun
		for i := range encs {
			if encs[i].Embedding == o.enc {
				c, r = costs[i].Costs, runs[i]
			}
		}
		p, err := linkplan.Predict(link, c, linkplan.Schedule{Staleness: o.staleness, LocalSteps: o.localSteps})
		if err != nil {
			t.Fatal(err)
		}
		s := r.Split
		t.Logf("%s k=%d Q=%d: predicted %.1f ms/step (passive %.1f, active %.1f, overhead %.1f, %d+%d bytes), measured %.1f ms/step (passive compute %.1f, active compute %.1f, round trip + transfer + transport %.1f)",
			name, o.staleness, o.localSteps, ms(p.PerExchange), ms(c.Passive), ms(c.Active), ms(c.Overhead), c.Forward, c.Backward,
			ms(s.Step), ms(s.Passive), ms(s.Active), ms(s.Link))
		if r.Forward != c.Forward || r.Backward != c.Backward {
			t.Errorf("%s: %d+%d bytes per step over the link, %d+%d in process", name, r.Forward, r.Backward, c.Forward, c.Backward)
		}
		if rel := math.Abs(ms(p.PerExchange)-ms(s.Step)) / ms(s.Step); rel > 0.2 {
			t.Errorf("%s k=%d Q=%d: predicted %.1f ms/step, measured %.1f: %.0f%% off, want within 20%%", name, o.staleness, o.localSteps, ms(p.PerExchange), ms(s.Step), 100*rel)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
