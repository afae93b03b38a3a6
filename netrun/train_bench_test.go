package netrun

import (
	"path/filepath"
	"testing"

	"github.com/splitguard/splitguard/transport/linktest"
)

// BenchmarkTwoProcessOverLink runs both parties over mutual TLS, on plain
// loopback and through an emulated wide-area link (20 ms round trip,
// 100 Mbit/s each way; transport/linktest), with the wire encodings f32,
// bf16, int8 and int4 both ways, at batch 1024 and a 128-wide cut (no
// protection), and reports the mean milliseconds per step (the active
// party's summary, evaluations included) and the bytes the passive sent
// and received per step (PSI and evaluations included). Run briefly:
//
//	go test -run XXX -bench TwoProcessOverLink -benchtime 1x ./netrun
func BenchmarkTwoProcessOverLink(b *testing.B) {
	path, certs := synthFile(b, 20000), testCerts(b)
	for _, link := range []struct {
		name string
		l    *linktest.Link
	}{{"loopback", nil}, {"link-20ms-100Mbit", &wan20}} {
		for _, enc := range []string{"f32", "bf16", "int8", "int4"} {
			b.Run(link.name+"/"+enc, func(b *testing.B) {
				for range b.N {
					base := wanShape(path, filepath.Join(b.TempDir(), "unused"))
					base.WireEmbedding, base.WireGradient = enc, enc
					s, res := linkRun(b, base, certs, link.l)
					b.ReportMetric(s.StepMSMean, "ms/step")
					b.ReportMetric(float64(res.Stats.BytesSent)/float64(s.Steps), "sent-B/step")
					b.ReportMetric(float64(res.Stats.BytesReceived)/float64(s.Steps), "recv-B/step")
				}
			})
		}
	}
}
