package netrun

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// listen starts the active party's gRPC server on cfg.Addr (mutual TLS
// unless cfg.InsecureLoopback), announcing cfg's fingerprint and the
// format of its IDs (idFormat) in Hello and answering with h. who names
// the caller in errors ("active", "active serve").
func listen(cfg *Config, opt Options, h grpcnet.Handlers, who, idFormat string) (*grpcnet.Server, error) {
	so := grpcnet.ServerOptions{InsecureLoopback: cfg.InsecureLoopback, Logger: opt.logger(),
		Local:           transport.Hello{Party: partyName(cfg.Name, "active"), Config: cfg.fingerprint(), IDFormat: idFormat},
		MaxMessageBytes: cfg.MaxMessageMB << 20,
		Handlers:        h,
		PipelineDepth:   pipelineDepth(cfg),
	}
	if !cfg.InsecureLoopback {
		var err error
		if so.TLS, err = pki.ServerTLSConfig(cfg.tlsFiles(), cfg.PeerName); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		so.TLS.Time = opt.Clock
	}
	srv, err := grpcnet.Listen(cfg.Addr, so)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	return srv, nil
}

// dial connects the passive party to the active party at cfg.Addr (mutual
// TLS unless cfg.InsecureLoopback). who names the caller in errors
// ("passive", "passive score"); connect bounds how long the Hello waits
// for an active party that does not answer (0: cfg.PeerTimeout).
func dial(cfg *Config, opt Options, who string, connect time.Duration) (*grpcnet.Client, error) {
	co := grpcnet.ClientOptions{InsecureLoopback: cfg.InsecureLoopback, Logger: opt.logger(),
		PipelineDepth:   pipelineDepth(cfg),
		MaxMessageBytes: cfg.MaxMessageMB << 20, ExchangeTimeout: cfg.ExchangeTimeout, CallTimeout: cfg.PeerTimeout, ConnectTimeout: connect}
	if !cfg.InsecureLoopback {
		var err error
		if co.TLS, err = pki.ClientTLSConfig(cfg.tlsFiles(), cfg.PeerName); err != nil {
			return nil, fmt.Errorf("%s: %w", who, err)
		}
		co.TLS.Time = opt.Clock
	}
	client, err := grpcnet.Dial(cfg.Addr, co)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", who, err)
	}
	return client, nil
}

// idFormatHint names two parties' ID formats when they differ, for the
// error of an (almost) empty intersection; "" when they agree or one is
// not known.
func idFormatHint(own, peer, ownRole, peerRole string) string {
	if own == "" || peer == "" || own == peer {
		return ""
	}
	return fmt.Sprintf(" (the %s party's IDs are written as %s, the %s party's as %s: the same ID written two ways, such as 1000 and 1000.0, is two IDs)",
		ownRole, own, peerRole, peer)
}

// abortSession tells the active party that the passive's session ended
// with err, giving the call 5 seconds whatever the state of the run's
// context.
func abortSession(client *grpcnet.Client, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = client.Shutdown(ctx, err.Error())
}

// newResponder starts the active party's side of a session's ID
// alignment over ids (sorted or not, free of duplicates, read in place):
// the streamed protocol (psi.NewStreamResponder), whose memory is bounded
// by its chunk and one spill partition (spilled under os.TempDir, or
// TMPDIR), not by the number of IDs.
func newResponder(ids []uint64) (*psi.StreamResponder, error) {
	return psi.NewStreamResponder(ids, psi.StreamOptions{})
}

// alignIDs runs the passive party's side of the ID alignment over call
// and returns the sorted intersection: the streamed protocol with an
// active party of one passive (newResponder), the hub protocol
// (psi.Hub) with an active party of several, as the active's answer to
// the first request says (psi.RunAlignUint64).
func alignIDs(ids []uint64, call func(*psi.Request) (*psi.Response, error)) ([]uint64, error) {
	return psi.RunAlignUint64(ids, psi.StreamOptions{}, call)
}

// announcedIDs is the number of IDs the passive announces in the first
// request of the streamed PSI (psi.RoundStreamHello), -1 when the request
// is not that one or does not say.
func announcedIDs(req *psi.Request) int64 {
	if req.Round != psi.RoundStreamHello || len(req.Digest) != 8 {
		return -1
	}
	return int64(min(binary.BigEndian.Uint64(req.Digest), 1<<62))
}

// respondPSI answers one PSI round of a session's responder (nil before
// Hello: an error naming who). Once the protocol is done it also returns
// the ID intersection, never nil then; before that, common is nil.
func respondPSI(who string, responder *psi.StreamResponder, req *psi.Request) (resp *psi.Response, common []uint64, err error) {
	if responder == nil {
		return nil, nil, fmt.Errorf("%s: PSI before Hello", who)
	}
	if resp, err = responder.Handle(req); err != nil {
		return nil, nil, err
	}
	if req.Round != psi.RoundStreamFinish {
		return resp, nil, nil
	}
	if common, err = responder.Intersection(); err != nil {
		return nil, nil, err
	}
	return resp, common, nil
}

// pipelineDepth is the number of training messages in flight under the
// configured staleness k (k+1), or 0 for the exact protocol.
func pipelineDepth(cfg *Config) int {
	if cfg.Staleness <= 0 {
		return 0
	}
	return cfg.Staleness + 1
}
