package inproc_test

import (
	"testing"

	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/inproc"
	"github.com/splitguard/splitguard/transport/transporttest"
)

// TestConformance checks the pipe against the transport contract.
func TestConformance(t *testing.T) {
	transporttest.TestConn(t, func(t *testing.T) (transport.PassiveConn, transport.ActiveConn) {
		p, a := inproc.Pipe()
		t.Cleanup(func() { _ = p.Close() })
		return p, a
	})
}
