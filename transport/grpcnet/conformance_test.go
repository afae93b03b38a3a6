package grpcnet_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/transporttest"
)

// TestConformance checks a Client and a Server connected over loopback
// with mutual TLS against the transport contract.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	if err := pki.InitCA(dir, pki.CAOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"active", "passive"} {
		if _, _, err := pki.Issue(dir, n, pki.IssueOptions{Hosts: []string{"127.0.0.1"}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := pki.ServerTLSConfig(pki.FilesIn(dir, "active"), "passive")
	if err != nil {
		t.Fatal(err)
	}
	ct, err := pki.ClientTLSConfig(pki.FilesIn(dir, "passive"), "active")
	if err != nil {
		t.Fatal(err)
	}
	fp := grpcnet.Fingerprint{CutDim: 3, BatchSize: 4, Seed: 1, Epochs: 2, ScheduleLength: 5}
	transporttest.TestConn(t, func(t *testing.T) (transport.PassiveConn, transport.ActiveConn) {
		quiet := slog.New(slog.DiscardHandler)
		s, err := grpcnet.Listen("127.0.0.1:0", grpcnet.ServerOptions{TLS: st, Local: grpcnet.Hello{Party: "active", Config: fp}, Logger: quiet,
			PipelineDepth: transporttest.PipelineDepth})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c, err := grpcnet.Dial(s.Addr(), grpcnet.ClientOptions{TLS: ct, Logger: quiet, PipelineDepth: transporttest.PipelineDepth})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Hello(context.Background(), grpcnet.Hello{Party: "passive", Config: fp}); err != nil {
			t.Fatal(err)
		}
		return c, s
	}, closeWithoutStream("CloseUnused"), closeWithoutStream("CloseAfterRefusal"))
}

// closeWithoutStream is the known deviation of Client.Close: it tells the
// Server that no more batches follow by ending the open Train stream, so
// when none is open (no Exchange yet, or the Server refused the last
// message, which ended its stream) the Server is not told and its Recv
// waits until the Server is closed. netrun sends Shutdown before Close,
// which ends Recv either way.
func closeWithoutStream(check string) transporttest.Deviation {
	return transporttest.Deviation{Check: check,
		Reason: "Client.Close with no open Train stream (none yet, or the last one ended by a refusal) does not end the Server's Recv; netrun sends Shutdown first"}
}
