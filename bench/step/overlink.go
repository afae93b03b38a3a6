package step

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/linktest"
	"github.com/splitguard/splitguard/transport/wire"
)

// LinkRun is one encoding's training steps over an emulated link.
type LinkRun struct {
	Wire wire.Encodings
	// Split are the medians of the timed steps: the step, each party's
	// compute and the rest of the exchange.
	Split Split
	// Forward and Backward are the mean bytes per step each way
	// (grpcnet.WireBytes).
	Forward, Backward int64
}

// MeasureOverLink trains the steps of spec, for each pair of encodings,
// with the two parties in this process connected by grpcnet with mutual
// TLS through an emulated link (transport/linktest: up carries the
// passive's messages, down the active's answers), and returns the medians
// of the timed steps: what the planner's prediction is checked against.
func MeasureOverLink(ctx context.Context, spec LinkSpec, up, down linktest.Link) ([]LinkRun, error) {
	spec, train, dir, err := spec.prepare("link run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []LinkRun
	for _, enc := range spec.Encodings {
		r, err := timedRun(ctx, spec, enc, train, linkPair(dir, up, down))
		if err != nil {
			return nil, fmt.Errorf("step: link run, %v/%v: %w", enc.Embedding, enc.Gradient, err)
		}
		c := r.costs(spec)
		out = append(out, LinkRun{Wire: enc, Split: r.split(spec), Forward: c.Forward, Backward: c.Backward})
	}
	return out, nil
}

// linkPair connects the parties by grpcnet with mutual TLS (certificates
// in dir) through a linktest proxy emulating up and down.
func linkPair(dir string, up, down linktest.Link) pairFunc {
	return func(ctx context.Context, enc wire.Encodings) (transport.PassiveConn, transport.ActiveConn, func(), error) {
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
		s, err := grpcnet.Listen("127.0.0.1:0", grpcnet.ServerOptions{TLS: st, Local: transport.Hello{Party: "active", Config: fp}, Logger: quiet})
		if err != nil {
			return nil, nil, nil, err
		}
		px, err := linktest.Start(s.Addr(), up, down)
		if err != nil {
			s.Close()
			return nil, nil, nil, err
		}
		c, err := grpcnet.Dial(px.Addr(), grpcnet.ClientOptions{TLS: ct, Logger: quiet})
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
