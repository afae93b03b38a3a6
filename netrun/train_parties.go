package netrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/fanin"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// partiesRun is the active party's process in a run with several passive
// parties (key parties): one address serves them all
// (grpcnet.ListenParties, each passive routed by its certificate's name),
// the ID alignment is the hub protocol (psi.Hub: every passive learns the
// full intersection), and the one message loop (active.Serve) reads the
// passives' joined connection (fanin.Join), as the in-process run does,
// so that the records are the in-process run's.
type partiesRun struct {
	cfg    Config
	log    *slog.Logger
	pd     *partyData
	names  []string
	widths []int
	agg    fanin.Aggregation
	hub    *psi.Hub
	srv    *grpcnet.Parties
	evalJudge
	// stepStart is when the current training step's message arrived.
	stepStart time.Time
	// ready is closed once the party is built on the intersection
	// (readyErr says why not); the passives' resume waits for it.
	ready    chan struct{}
	readyErr error

	// Set by align, then read by the message loop only.
	split   *data.Split
	party   *active.Active
	planned int64
	ids     []uint64 // this step's example IDs
	views   [][]int  // the audited subsets of passive parties
	cols    [][2]int // each passive's columns of the joined embedding
	scratch []*tensor.Matrix

	ck partiesCheckpoints
}

// runActiveParties is RunActive with several passive parties (cfg
// validated and resolved).
func runActiveParties(ctx context.Context, cfg Config, opt Options) (*rundir.Summary, error) {
	log := opt.logger().With("party", "active")
	lock, err := openOut(&cfg, opt, "active", log)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := writeConfig(&cfg); err != nil {
		return nil, err
	}
	pd, err := loadParty(&cfg, true)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	if err := pd.saveEncoding(cfg.Out); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	r := &partiesRun{cfg: cfg, log: log, pd: pd, names: cfg.PartyNames(), agg: fanin.Aggregation(cfg.AggregationOr()), ready: make(chan struct{})}
	r.ck.store = store{dir: cfg.checkpointDir(), role: "active", keep: cfg.KeepCheckpoints}
	r.ck.props, r.ck.settled = make([][]int64, len(r.names)), make(chan struct{})
	r.ck.store.acked = func() int64 { return r.ck.acked }
	if r.ck.acked, err = r.ck.store.readAcked(); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	for k := range r.names {
		pc := cfg.PartyConfig(k)
		r.widths = append(r.widths, pc.CutDim())
	}
	log.Info("data loaded", "train", len(pd.split.Train.IDs), "test", len(pd.split.Test.IDs), "passives", strings.Join(r.names, ", "), "aggregation", r.agg)
	if r.hub, err = psi.NewHub(pd.ids(), len(r.names), psi.StreamOptions{}); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	defer r.hub.Close()
	// With checkpoints, what a previous process of this run wrote is kept
	// until the resume step is known (settle rewinds to it).
	if r.rec, err = rundir.Open(cfg.Config, cfg.CheckpointEvery > 0, rundir.Hooks{}); err != nil {
		return nil, err
	}
	defer r.rec.Close()
	if r.srv, err = r.listen(opt); err != nil {
		return nil, err
	}
	defer r.srv.Close()
	r.met = newActiveMetrics(cfg, r.srv.Stats)
	stopMetrics, err := r.met.start(cfg.MetricsAddr, log)
	if err != nil {
		return nil, err
	}
	defer stopMetrics()
	if opt.Ready != nil {
		opt.Ready(r.srv.Addr())
	}
	start := time.Now()
	if err := r.align(ctx); err != nil {
		r.readyErr = err
		close(r.ready)
		return nil, err
	}
	close(r.ready)
	serr := r.serve(ctx)
	steps := r.party.Step()
	if serr == nil && (steps >= r.planned || r.stopSent) {
		if r.stopSent && steps < r.planned {
			r.rec.SetEarlyStopped()
		}
		if err := r.kept.write(cfg.Out, rundir.TopModelFile, r.party.SaveModel); err != nil {
			return nil, r.endEarly(fmt.Errorf("active: saving the model: %w", err), start)
		}
		s, err := r.rec.Finish(steps, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("active: %w", err)
		}
		return s, nil
	}
	if serr == nil {
		serr = fmt.Errorf("active: the passive parties ended the run after %d of %d planned steps", steps, r.planned)
	}
	if errors.Is(serr, ErrPeerGone) {
		if err := r.kept.write(cfg.Out, rundir.TopModelFile, r.party.SaveModel); err != nil {
			serr = errors.Join(serr, err)
		}
		serr = fmt.Errorf("active: %w after %d steps; the model is saved in %s", serr, steps, cfg.Out)
	}
	if cause := signalled(ctx); cause != nil {
		serr = fmt.Errorf("active: %w", cause)
	}
	return nil, r.endEarly(serr, start)
}

// endEarly writes the summary of a truncated run and returns why.
func (r *partiesRun) endEarly(why error, start time.Time) error {
	r.log.Error("the run ended before its planned steps", "steps", r.party.Step(), "planned", r.planned, "err", why)
	r.rec.Truncate(why.Error())
	if _, err := r.rec.Finish(r.party.Step(), time.Since(start)); err != nil {
		return errors.Join(why, fmt.Errorf("active: no summary of the truncated run: %w", err))
	}
	return why
}

// listen serves every passive party on cfg.Addr: with mutual TLS each
// must present a certificate of its own name; each is greeted with its
// own cut width.
func (r *partiesRun) listen(opt Options) (*grpcnet.Parties, error) {
	cfg := &r.cfg
	local := grpcnet.Hello{Party: partyName(cfg.Name, "active"), Config: cfg.fingerprint(), IDFormat: r.pd.split.Info.IDFormat.String()}
	po := grpcnet.PartiesOptions{InsecureLoopback: cfg.InsecureLoopback, Local: local, MaxMessageBytes: cfg.MaxMessageMB << 20, Logger: opt.logger()}
	if !cfg.InsecureLoopback {
		var err error
		if po.TLS, err = pki.ServerTLSConfigFor(cfg.tlsFiles(), r.names); err != nil {
			return nil, fmt.Errorf("active: %w", err)
		}
		po.TLS.Time = opt.Clock
	}
	for k, name := range r.names {
		own := local
		own.Config.CutDim = r.widths[k]
		po.Passives = append(po.Passives, grpcnet.PartyOptions{Name: name, Local: &own, Handlers: grpcnet.Handlers{
			Hello: func(_ context.Context, peer grpcnet.Hello) error {
				r.log.Info("session started", "peer", name)
				return nil
			},
			// The hub's result request waits for every passive; no lock
			// of this run is held meanwhile.
			PSI: func(ctx context.Context, req *psi.Request) (*psi.Response, error) { return r.hub.Handle(ctx, k, req) },
			Checkpoint: func(ctx context.Context, step int64, holds []int64) error {
				return r.checkpointAt(ctx, k, step, holds)
			},
			Shutdown: func(_ context.Context, reason string) error {
				r.log.Info("a passive party ends the run", "peer", name, "reason", reason)
				return nil
			},
		}})
	}
	srv, err := grpcnet.ListenParties(cfg.Addr, po)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	return srv, nil
}

// align waits for the hub's intersection (every passive's, at most the
// peer timeout) and builds the party on it.
func (r *partiesRun) align(ctx context.Context) error {
	select {
	case <-r.hub.Done():
	case <-ctx.Done():
		return fmt.Errorf("active: before the ID alignment: %w", context.Cause(ctx))
	case <-time.After(r.cfg.PeerTimeout):
		return fmt.Errorf("active: %w: the ID alignment with every passive party did not end within %v", ErrPeerGone, r.cfg.PeerTimeout)
	}
	common, err := r.hub.Intersection()
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	cfg := &r.cfg
	split := r.pd.restrict(common)
	if len(split.Train.IDs) < 2 {
		return fmt.Errorf("active: only %d training examples in the intersection of %d IDs", len(split.Train.IDs), len(common))
	}
	eval, valRows, err := holdOut(cfg, split)
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	if err := writeConfig(cfg); err != nil {
		return err
	}
	top, wide, err := r.top(split.Train.X)
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	def, err := cfg.BuildDefences(split.Train)
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	sched, err := schedule.New(len(split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return err
	}
	aud, err := cfg.NewAuditor()
	if err != nil {
		return err
	}
	if r.guard, err = cfg.NewGuard(); err != nil {
		return err
	}
	enc, err := cfg.Wire()
	if err != nil {
		return err
	}
	blocks, err := r.blocks()
	if err != nil {
		return err
	}
	r.views, r.cols = fanin.Coalitions(len(r.names)), r.agg.Blocks(r.widths)
	if err := r.guard.SetParties(r.names, r.cols); err != nil {
		return err
	}
	r.scratch = make([]*tensor.Matrix, 3*len(r.views))
	var audits []rundir.PartyAudit
	for _, members := range r.views {
		pa, err := cfg.NewAuditor()
		if err != nil {
			return err
		}
		var mn []string
		for _, k := range members {
			mn = append(mn, r.names[k])
		}
		audits = append(audits, rundir.PartyAudit{Name: strings.Join(mn, "+"), Members: mn, Auditor: pa})
	}
	r.ck.aud, r.ck.audits, r.ck.total = aud, audits, int64(cfg.Epochs)*int64(sched.BatchesPerEpoch())
	r.rec.SetConfig(cfg.Config)
	r.rec.SetValRows(valRows)
	r.rec.SetValLabels(eval.Labels[:valRows])
	r.rec.SetParties(audits)
	if w := config.PositivesWarning(cfg.Batch, positiveRate(split.Train.Labels)); w.Text != "" {
		r.rec.Warn(w.Text, w.Keys...)
	}
	party, err := active.New(top, split.Train, eval, sched, r.agg.Width(r.widths), active.Config{
		Protector: def.Protector, Loss: def.Loss, TrainLabels: def.TrainLabels, TrainTargets: def.TrainTargets, Wide: wide, ACEBins: cfg.ACEBins, Seed: cfg.Seed,
		Observer: r.observe, EvalObserver: r.evalDone, ValRows: valRows, WireGradient: enc.Gradient, WireFeedback: cfg.WireFeedback,
		Contribution: cfg.Contribution, LocalSteps: cfg.LocalSteps, Blocks: blocks,
	})
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	r.planned = int64(cfg.Epochs) * int64(sched.BatchesPerEpoch())
	if cfg.MaxSteps > 0 {
		r.planned = min(r.planned, cfg.MaxSteps)
	}
	r.rec.Start(split, aud, int64(cfg.Epochs)*int64(sched.BatchesPerEpoch()))
	r.split, r.party = split, party
	r.log.Info("IDs aligned", "intersection", len(common), "train", len(split.Train.IDs), "validation", valRows, "test", len(split.Test.IDs))
	return nil
}

// top builds the top model as the in-process run does
// (config.Config.BuildPartyModels): under concat its input is the sum of
// the passives' cut widths.
func (r *partiesRun) top(x *data.Features) (model.Top, bool, error) {
	tc := r.cfg.Config
	tc.Layers = slices.Clone(tc.Layers)
	tc.Resolve()
	kind, _ := model.LookupKind(tc.Model)
	if r.agg == fanin.Concat && !kind.Images {
		w := 0
		for _, x := range r.widths {
			w += x
		}
		tc.Layers[tc.Cut-1] = w
	}
	if kind.Wide && (x == nil || x.NumCat+x.NumDense == 0) {
		return nil, false, config.Keyed(fmt.Errorf("model %s: the passive parties leave the active party's wide part no column (key active_columns)", tc.Model), "active_columns")
	}
	t, wide, err := tc.BuildTop(x)
	if err != nil || r.agg != fanin.Gated {
		return t, wide, err
	}
	// The learned weights of the parties in front of the top, as
	// BuildPartyModels puts them (fanin.Join has checked the widths).
	g, err := config.NewGatedTop(t, len(r.widths), r.widths[0], float32(tc.LR))
	return g, wide, err
}

// blocks are the passives' gradient blocks under concat and gated, each protected
// by its party's protection.
func (r *partiesRun) blocks() ([]active.Block, error) {
	if r.agg == fanin.Sum {
		return nil, nil
	}
	cols := r.agg.Blocks(r.widths)
	var out []active.Block
	for k, name := range r.names {
		pc := r.cfg.PartyConfig(k)
		set, err := protect.Build(pc.Protect, pc.Params, pc.Seed)
		if err != nil {
			return nil, fmt.Errorf("active: passive party %s: %w", name, err)
		}
		out = append(out, active.Block{Name: name, Lo: cols[k][0], Hi: cols[k][1], Protector: set.Protector})
	}
	return out, nil
}

// serve runs the message loop over the passives' joined connection.
func (r *partiesRun) serve(ctx context.Context) error {
	conns := make([]transport.ActiveConn, len(r.names))
	for k, name := range r.names {
		conns[k] = &peerConn{srv: r.srv.Conn(k), name: name, timeout: r.cfg.PeerTimeout}
	}
	joined, err := fanin.Join(conns, r.agg, r.widths)
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	locked := &lockedConn{ActiveConn: joined, mu: &r.ck.mu}
	err = active.Serve(ctx, locked, r)
	locked.release()
	if err != nil && !errors.Is(err, ErrPeerGone) && ctx.Err() == nil {
		r.log.Error("refusing a message; ending the run", "err", err)
		for k := range r.names {
			r.srv.Conn(k).Abort(err)
		}
	}
	if errors.Is(err, ErrPeerGone) && ctx.Err() == nil {
		r.endSurvivors(err)
	}
	return err
}

// peerConn is one passive's connection that waits at most the peer
// timeout for a message.
type peerConn struct {
	srv     *grpcnet.Server
	name    string
	timeout time.Duration
}

func (c *peerConn) Recv(ctx context.Context) (*transport.Forward, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	f, err := c.srv.Recv(rctx)
	cancel()
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return f, err
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("%w: no message from passive party %s for %v", ErrPeerGone, c.name, c.timeout)
	}
	return nil, fmt.Errorf("passive party %s: %w", c.name, err)
}

func (c *peerConn) Reply(ctx context.Context, b *transport.Backward) error {
	return c.srv.Reply(ctx, b)
}

// TrainStep implements active.Handler.
func (r *partiesRun) TrainStep(f *transport.Forward) (*transport.Backward, error) {
	if err := r.ackSaved(f.Step); err != nil {
		return nil, err
	}
	r.ids, r.stepStart = f.IDs, time.Now()
	return r.party.TrainStep(f)
}

// EvalBatch implements active.Handler; the answer to a round's last
// message carries the verdict evalDone made.
func (r *partiesRun) EvalBatch(f *transport.Forward) (*transport.Backward, error) {
	b, err := r.party.EvalBatch(f)
	if err != nil || !f.Last {
		return b, err
	}
	r.answer(b)
	return b, nil
}

// observe audits and records one training step as the in-process run
// does: every passive party's coalition at the cut as the run's leak, and
// each party and colluding subset at the cut (its columns of the
// gradient and embedding) as Parties. The passives' layers below the cut
// are theirs: the in-process run's per-party figures of those layers have
// no counterpart here.
func (r *partiesRun) observe(a *active.Observation) error {
	scores, err := r.guard.Batch(a.Step, a.Embedding)
	r.rec.ObserveIntegrity(scores)
	if err != nil {
		return err
	}
	one := []string{"cut"}
	main := &audit.Batch{Step: a.Step, Epoch: a.Epoch, IDs: r.ids, Labels: a.Labels, Layers: one,
		Grads: []*tensor.Matrix{a.Protected}, Outputs: []*tensor.Matrix{a.Embedding},
		Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{a.Clean}, nil }}
	batches := make([]*audit.Batch, len(r.views))
	for v, members := range r.views {
		g, e, c := r.columns(3*v, a.Protected, members), r.columns(3*v+1, a.Embedding, members), r.columns(3*v+2, a.Clean, members)
		batches[v] = &audit.Batch{Step: a.Step, Epoch: a.Epoch, IDs: r.ids, Labels: a.Labels, Layers: one,
			Grads: []*tensor.Matrix{g}, Outputs: []*tensor.Matrix{e},
			Clean: func() ([]*tensor.Matrix, error) { return []*tensor.Matrix{c}, nil }}
	}
	rec, err := r.rec.Batch(rundir.Observation{Active: a, Audit: main, Parties: batches})
	if err == nil {
		r.met.batch(rec, time.Since(r.stepStart))
	}
	return err
}

// columns gathers the members' column blocks of m into scratch matrix i.
func (r *partiesRun) columns(i int, m *tensor.Matrix, members []int) *tensor.Matrix {
	var ranges [][2]int
	for _, k := range members {
		if c := r.cols[k]; len(ranges) == 0 || ranges[len(ranges)-1] != c {
			ranges = append(ranges, c) // under sum every block is the whole
		}
	}
	r.scratch[i] = fanin.Gather(r.scratch[i], m, ranges)
	return r.scratch[i]
}

// evalDone records an evaluation and makes the verdict the round's last
// answer carries (evalJudge.judge).
func (r *partiesRun) evalDone(res *active.EvalResult) error {
	return r.judge(res, r.cfg.Select, r.party.SaveModel, r.log)
}
