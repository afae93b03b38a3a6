package netrun

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport/linktest"
)

// The WAN benchmark's table and length (BenchmarkOverlapOverLink): the
// defaults are the 30-step shape of docs/methods/wan.md; a longer run
// (-overlap-rows 200000: about 310 steps) weighs the pipeline's filling at
// the start and its drain at each epoch's evaluation as a real run does.
var (
	overlapRows   = flag.Int("overlap-rows", 20000, "BenchmarkOverlapOverLink: rows of the synthetic table")
	overlapEpochs = flag.Int("overlap-epochs", 2, "BenchmarkOverlapOverLink: epochs of each run")
	overlapSeed   = flag.Uint64("overlap-seed", 0, "BenchmarkOverlapOverLink: the runs' seed (0: wanShape's)")
)

// wan20 is the emulated link of issue 30: 20 ms round trip, 100 Mbit/s
// each way.
var wan20 = linktest.Link{Delay: 10 * time.Millisecond, BytesPerSecond: linktest.Mbit(100), Burst: 64 << 10}

// linkRun trains base as two parties over mutual TLS (certificates in
// certs), through the emulated link when link is set, without
// checkpoints, and returns the active party's summary and the passive's
// result.
func linkRun(tb testing.TB, base config.Config, certs string, link *linktest.Link) (*rundir.Summary, *PassiveResult) {
	tb.Helper()
	root := tb.TempDir()
	act, pas := partyConfigs(base, root, certs)
	act.CheckpointEvery, pas.CheckpointEvery = 0, 0
	// Generous: on a loaded machine the alignment of 20,000 IDs is slow.
	act.PeerTimeout, pas.PeerTimeout = 2*time.Minute, 2*time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var wait func() (*rundir.Summary, error)
	pas.Addr, wait = startActive(tb, ctx, act)
	if link != nil {
		px, err := linktest.Start(pas.Addr, *link, *link)
		if err != nil {
			tb.Fatal(err)
		}
		defer px.Close()
		pas.Addr = px.Addr()
	}
	res, err := RunPassive(ctx, pas, Options{Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := wait()
	if err != nil {
		tb.Fatal(err)
	}
	return s, res
}

// testCerts issues the two parties' certificates.
func testCerts(tb testing.TB) string {
	certs := tb.TempDir()
	if err := pki.InitCA(certs, pki.CAOptions{}); err != nil {
		tb.Fatal(err)
	}
	for _, n := range []string{"active", "passive"} {
		if _, _, err := pki.Issue(certs, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			tb.Fatal(err)
		}
	}
	return certs
}

// wanShape is the measured shape of docs/methods/wan.md: batch 1024, a
// 128-wide cut, no protection, int8 messages both ways.
func wanShape(path, out string) config.Config {
	c := smallConfig(path, out)
	c.Layers, c.Cut, c.EmbedDim = []int{128, 128, 128}, 2, 4
	c.Batch, c.Epochs, c.EvalEvery = 1024, 2, 0
	c.Protect, c.Params, c.Attacks = "none", nil, []string{"norm"}
	c.Baseline = false
	c.WireEmbedding, c.WireGradient = "int8", "int8"
	return c
}

// stepTime is the passive party's wall time per training step: its
// compute and its wait for answers (evaluations, PSI and start-up
// excluded).
func stepTime(res *PassiveResult) time.Duration {
	if res.Timing.Steps == 0 {
		return 0
	}
	return (res.Timing.Compute + res.Timing.Exchange) / time.Duration(res.Timing.Steps)
}

// TestOverlapOverLink trains a small model (batch 64: compute well under
// the round trip) over the emulated 20 ms / 100 Mbit/s link with
// staleness 0, 2 and 4 and logs the passive party's milliseconds per
// step: with k+1 messages in flight one round trip serves k+1 steps. It
// asserts nothing about time (a shared machine's timings vary); it checks
// that every run takes every step.
func TestOverlapOverLink(t *testing.T) {
	if testing.Short() {
		t.Skip("three runs over an emulated link")
	}
	path, certs := synthFile(t, 3000), testCerts(t)
	for _, k := range []int{0, 2, 4} {
		base := smallConfig(path, filepath.Join(t.TempDir(), "unused"))
		base.Staleness, base.Epochs, base.EvalEvery = k, 1, 0
		s, res := linkRun(t, base, certs, &wan20)
		if s.Steps != res.Steps || s.Steps < 30 {
			t.Errorf("staleness %d: the active took %d steps, the passive %d", k, s.Steps, res.Steps)
		}
		t.Logf("staleness %d over 20 ms / 100 Mbit/s: %v per step over %d steps (passive compute %v, waiting %v in all)",
			k, stepTime(res).Round(time.Microsecond*100), res.Steps, res.Timing.Compute.Round(time.Millisecond), res.Timing.Exchange.Round(time.Millisecond))
	}
}

// BenchmarkOverlapOverLink measures the WAN shape on a 20,000-row table,
// on loopback and over the emulated link, for staleness 0, 1, 2, 4 (and 4
// with linear weight prediction of factor 2, "k4F2") and local steps 1, 2: the passive party's milliseconds per training step
// (stepTime), bytes per step (PSI and evaluations included) and the test
// AUC; int8 both ways, and int4 both ways for k0, k4F2, k5F1, k6F1 and k6F2
// ("k0-int4", …), and k6F1 in int4 compressed with zstd ("k6F1-int4-zstd";
// its bytes are the compressed ones). Run briefly:
//
//	go test -run XXX -bench OverlapOverLink -benchtime 1x ./netrun
//
// and a run of realistic length with -overlap-rows 200000 (flags above).
func BenchmarkOverlapOverLink(b *testing.B) {
	if *overlapRows < 2000 || *overlapEpochs < 1 {
		b.Fatalf("-overlap-rows %d, -overlap-epochs %d: want at least 2,000 rows and 1 epoch", *overlapRows, *overlapEpochs)
	}
	path, certs := synthFile(b, *overlapRows), testCerts(b)
	for _, link := range []struct {
		name string
		l    *linktest.Link
	}{{"loopback", nil}, {"link-20ms-100Mbit", &wan20}} {
		for _, q := range []int{1, 2} {
			for _, sc := range []struct {
				name string
				k    int
				f    float64 // linear weight prediction's factor
				enc  string  // both directions; "" is wanShape's int8
				comp string  // wire_compression; "" is none
			}{{"k0", 0, 0, "", ""}, {"k1", 1, 0, "", ""}, {"k2", 2, 0, "", ""}, {"k4", 4, 0, "", ""}, {"k4F2", 4, 2, "", ""},
				{"k0-int4", 0, 0, "int4", ""}, {"k4F2-int4", 4, 2, "int4", ""}, {"k5F1-int4", 5, 1, "int4", ""}, {"k6F1-int4", 6, 1, "int4", ""}, {"k6F2-int4", 6, 2, "int4", ""},
				{name: "k6F1-int4-zstd", k: 6, f: 1, enc: "int4", comp: "zstd"}} {
				b.Run(fmt.Sprintf("%s/%s/Q%d", link.name, sc.name, q), func(b *testing.B) {
					for range b.N {
						base := wanShape(path, filepath.Join(b.TempDir(), "unused"))
						base.Staleness, base.LocalSteps, base.StalenessPrediction = sc.k, q, sc.f
						base.Epochs = *overlapEpochs
						if *overlapSeed != 0 {
							base.Seed = *overlapSeed
						}
						if sc.enc != "" {
							base.WireEmbedding, base.WireGradient = sc.enc, sc.enc
						}
						base.WireCompression = sc.comp
						s, res := linkRun(b, base, certs, link.l)
						b.ReportMetric(float64(stepTime(res).Microseconds())/1000, "ms/step")
						b.ReportMetric(float64(res.Stats.BytesSent+res.Stats.BytesReceived)/float64(s.Steps), "B/step")
						b.ReportMetric(s.TestAUCFinal, "test-AUC")
					}
				})
			}
		}
	}
}
