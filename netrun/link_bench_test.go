package netrun

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport/linktest"
)

// BenchmarkTwoProcessOverLink runs both parties over mutual TLS, on plain
// loopback and through an emulated wide-area link (20 ms round trip,
// 100 Mbit/s each way; transport/linktest), with the wire encodings f32,
// bf16 and int8 both ways, at batch 1024 and a 128-wide cut (no
// protection), and reports the mean milliseconds per step (the active
// party's summary, evaluations included) and the bytes the passive sent
// and received per step (PSI and evaluations included). Run briefly:
//
//	go test -run XXX -bench TwoProcessOverLink -benchtime 1x ./netrun
func BenchmarkTwoProcessOverLink(b *testing.B) {
	path := synthFile(b, 20000)
	certs := b.TempDir()
	if err := pki.InitCA(certs, pki.CAOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"active", "passive"} {
		if _, _, err := pki.Issue(certs, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			b.Fatal(err)
		}
	}
	wan := linktest.Link{Delay: 10 * time.Millisecond, BytesPerSecond: linktest.Mbit(100), Burst: 64 << 10}
	for _, link := range []struct {
		name string
		l    *linktest.Link
	}{{"loopback", nil}, {"link-20ms-100Mbit", &wan}} {
		for _, enc := range []string{"f32", "bf16", "int8"} {
			b.Run(link.name+"/"+enc, func(b *testing.B) {
				for range b.N {
					root := b.TempDir()
					base := smallConfig(path, filepath.Join(root, "unused"))
					base.Layers, base.Cut, base.EmbedDim = []int{128, 128, 128}, 2, 4
					base.Batch, base.Epochs, base.EvalEvery = 1024, 2, 0
					base.Protect, base.Params, base.Attacks = "none", nil, []string{"norm"}
					base.Baseline = false
					base.WireEmbedding, base.WireGradient = enc, enc
					act, pas := partyConfigs(base, root, certs)
					act.CheckpointEvery, pas.CheckpointEvery = 0, 0
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
					addr := make(chan string, 1)
					done := make(chan error, 1)
					var steps int64
					var stepMS float64
					go func() {
						s, err := RunActive(ctx, act, Options{Logger: testLogger(b), Ready: func(a string) { addr <- a }})
						if s != nil {
							steps, stepMS = s.Steps, s.StepMSMean
						}
						done <- err
					}()
					select {
					case pas.Addr = <-addr:
					case err := <-done:
						b.Fatal(err)
					}
					if link.l != nil {
						px, err := linktest.Start(pas.Addr, *link.l, *link.l)
						if err != nil {
							b.Fatal(err)
						}
						defer px.Close()
						pas.Addr = px.Addr()
					}
					res, err := RunPassive(ctx, pas, Options{Logger: testLogger(b)})
					if err != nil {
						b.Fatal(err)
					}
					if err := <-done; err != nil {
						b.Fatal(err)
					}
					cancel()
					b.ReportMetric(stepMS, "ms/step")
					b.ReportMetric(float64(res.Stats.BytesSent)/float64(steps), "sent-B/step")
					b.ReportMetric(float64(res.Stats.BytesReceived)/float64(steps), "recv-B/step")
				}
			})
		}
	}
}
