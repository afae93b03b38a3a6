package netrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// activeRun is the state of the active party's process.
type activeRun struct {
	cfg   Config
	log   *slog.Logger
	pd    *partyData
	srv   *grpcnet.Server
	store store
	evalJudge

	// mu is held while a message is processed and during control calls,
	// so that a checkpoint or rollback never overlaps a step.
	mu        sync.Mutex
	responder *psi.StreamResponder
	common    []uint64 // the ID intersection, once known
	// realign bounds the PSIs of later sessions (a restarted passive's,
	// or an impostor's once the passive is gone); passiveIDs is the number
	// of IDs the passive aligned with the first time (announced in the
	// PSI's first request), which a later session's must equal; announced
	// the session's own.
	realign               *rate.Limiter
	passiveIDs, announced int64
	// peerIDFormat is how the session's passive writes its IDs (Hello).
	peerIDFormat string
	// warnedPositives: the summary already warns of too few positives per
	// batch.
	warnedPositives bool
	split           *data.Split
	eval            *data.Dataset // validation rows, then test rows
	valRows         int
	party           *active.Active
	aud             *audit.Auditor
	layers          []string
	embedding       *tensor.Matrix
	ids             []uint64
	epoch           int
	stepStart       time.Time
	// computeSteps training steps took computeTime in this process (the
	// top's forward and backward, the protection, the audit).
	computeSteps int64
	computeTime  time.Duration
	// waitSteps times the active waited waitTime from answering a training
	// step to the next one's arrival (the passive's compute, the round
	// trip and the transfers; not across evaluations); answered is when it
	// last answered one (zero after an evaluation message).
	waitSteps int64
	waitTime  time.Duration
	answered  time.Time
	start     time.Time
	// planned is the number of training steps of the run.
	planned int64
	// saved is the step of the newest checkpoint this party saved or
	// resumed from; acked the newest one both parties are known to hold
	// (the passive sent a training step after it). No Checkpoint call may
	// go back behind acked, which survives restarts (store.acked).
	saved, acked int64
	// reserve holds disk space for the summary of a run ended early.
	reserve *atomicfile.Reservation
	// baseCtx ends with RunActive (abandoning a baseline fit still
	// running); baseline delivers the fit started beside training once
	// the IDs are aligned (nil without one).
	baseCtx  context.Context
	baseline chan *rundir.BaselineSummary
}

// RunActive runs the active party: it loads its data, listens, aligns IDs
// with the passive party, trains and evaluates as the passive drives, and
// writes the run directory cfg.Out (config.yaml, batches.jsonl, eval.jsonl,
// summary.json, top.model). It returns when the passive party ends the run,
// when the run fails, or when the passive stayed away longer than
// cfg.PeerTimeout (an error wrapping ErrPeerGone, after saving a checkpoint).
func RunActive(ctx context.Context, cfg Config, opt Options) (*rundir.Summary, error) {
	cfg.resolve()
	if err := cfg.prepare("active", opt); err != nil {
		return nil, err
	}
	if err := checkpointable(&cfg); err != nil {
		return nil, err
	}
	if cfg.MultiParty() {
		return runActiveParties(ctx, cfg, opt)
	}
	log := opt.logger().With("party", "active")
	lock, err := openOut(&cfg, opt, "active", log)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	pd, err := loadActive(&cfg, log)
	if err != nil {
		return nil, err
	}
	r := &activeRun{cfg: cfg, log: log, pd: pd, start: time.Now(), store: store{dir: cfg.checkpointDir(), role: "active", keep: cfg.KeepCheckpoints},
		realign: rate.NewLimiter(rate.Every(realignEvery), realignBurst)}
	r.store.acked = func() int64 { return r.acked }
	var cancelBase context.CancelFunc
	r.baseCtx, cancelBase = context.WithCancel(ctx)
	defer cancelBase()
	defer r.closeRecords()
	if err := r.openRecords(); err != nil {
		return nil, err
	}
	stop, err := r.startServer(opt)
	if err != nil {
		return nil, err
	}
	defer stop()
	serr := r.serve(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end(ctx, serr)
}

// checkpointable refuses a run with checkpoints and an epoch attack, whose
// memory of the epoch no checkpoint holds.
func checkpointable(cfg *Config) error {
	if cfg.CheckpointEvery <= 0 {
		return nil
	}
	for _, a := range cfg.AttackNames() {
		if needs, err := attack.Describe(a); err == nil && needs.EpochMemory {
			return fmt.Errorf("active: the epoch attack %s cannot be checkpointed; run it without checkpoints", a)
		}
	}
	return nil
}

// loadActive writes the active party's config.yaml, loads its data with
// the labels (warning of a batch larger than the training rows) and saves
// the data's encoding in the run directory.
func loadActive(cfg *Config, log *slog.Logger) (*partyData, error) {
	if err := writeConfig(cfg); err != nil {
		return nil, err
	}
	pd, err := loadParty(cfg, true)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	log.Info("data loaded", "train", len(pd.split.Train.IDs), "test", len(pd.split.Test.IDs))
	if w := config.BatchWarning(cfg.Batch, len(pd.split.Train.IDs), cfg.Epochs); w.Text != "" {
		log.Warn(w.Text, w.LogArgs()...)
	}
	if err := pd.saveEncoding(cfg.Out); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	return pd, nil
}

// openRecords prepares the run directory's records: it removes orphaned
// files, reserves room for the summary of a run that a full disk stops,
// reads the acknowledged step and the fallbacks of earlier processes, and
// opens the recorder, keeping what a previous process of this run wrote
// (the resume step, known later, decides what stays: build rewinds to it).
// closeRecords undoes it.
func (r *activeRun) openRecords() error {
	cfg := &r.cfg
	if err := cleanOrphans(r.log, cfg.Out, cfg.checkpointDir()); err != nil {
		return fmt.Errorf("active: %w", err)
	}
	var err error
	if r.reserve, err = atomicfile.Reserve(cfg.Out, 1<<20); err != nil {
		return fmt.Errorf("active: %w", err)
	}
	if r.acked, err = r.store.readAcked(); err != nil {
		return fmt.Errorf("active: %w", err)
	}
	r.saved = r.acked
	if r.rec, err = rundir.Open(cfg.Config, true, rundir.Hooks{}); err != nil {
		return err
	}
	fbs, err := r.store.readFallbacks()
	if err != nil {
		return fmt.Errorf("active: %w", err)
	}
	for _, fb := range fbs {
		r.rec.AddFallback(fb)
	}
	return nil
}

// closeRecords closes what openRecords opened: the recorder, then the
// summary's reserved room.
func (r *activeRun) closeRecords() {
	if r.rec != nil {
		r.rec.Close()
	}
	if r.reserve != nil {
		r.reserve.Release()
	}
}

// startServer starts the gRPC server and the metrics endpoint and tells
// opt.Ready the address; stop closes both.
func (r *activeRun) startServer(opt Options) (stop func(), err error) {
	// The handlers (a restarted passive calls at once) wait for r.met.
	r.mu.Lock()
	r.srv, err = listen(&r.cfg, opt, grpcnet.Handlers{Hello: r.hello, PSI: r.psi, Checkpoint: r.checkpoint,
		Shutdown: func(_ context.Context, reason string) error {
			r.log.Info("the passive party ends the run", "reason", reason)
			return nil
		}}, "active", r.pd.split.Info.IDFormat.String())
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	r.met = newActiveMetrics(r.cfg, r.srv.Stats)
	r.mu.Unlock()
	stopMetrics, err := r.met.start(r.cfg.MetricsAddr, r.log)
	if err != nil {
		r.srv.Close()
		return nil, err
	}
	if opt.Ready != nil {
		opt.Ready(r.srv.Addr())
	}
	return func() { stopMetrics(); r.srv.Close() }, nil
}

// end ends the run as serve's outcome serr says (r.mu held): the summary
// of a run trained to its end or stopped early; or, after an alarm, a
// peer gone (the model and a checkpoint saved), a signal or another
// failure, the records of a run ended early and the error.
func (r *activeRun) end(ctx context.Context, serr error) (*rundir.Summary, error) {
	if r.party == nil {
		if serr != nil {
			return nil, serr
		}
		return nil, errors.New("active: the passive party ended the run before training started")
	}
	steps := r.party.Step()
	if alarm := (*integrity.Alarm)(nil); errors.As(serr, &alarm) {
		return r.alarmed(alarm, steps)
	}
	early := serr == nil && r.stopSent && steps < r.planned
	if early {
		r.rec.SetEarlyStopped()
		r.log.Info("early stop: evaluations without a better validation AUC", "early_stop", r.cfg.EarlyStop, "steps", steps)
	}
	if serr == nil && (steps >= r.planned || early) {
		if err := r.saveFinal(); err != nil {
			return nil, r.endEarly(fmt.Errorf("active: saving the model: %w", err))
		}
		return r.finish()
	}
	if serr == nil {
		serr = fmt.Errorf("active: the passive party ended the run after %d of %d planned steps", steps, r.planned)
	}
	if errors.Is(serr, ErrPeerGone) {
		if err := r.saveFinal(); err != nil {
			return nil, errors.Join(serr, err, r.endEarly(serr))
		}
		if r.cfg.CheckpointEvery > 0 {
			if err := r.saveCheckpoint(steps); err != nil {
				return nil, errors.Join(serr, err, r.endEarly(serr))
			}
		}
		serr = fmt.Errorf("active: %w after %d steps; the model is saved in %s", serr, steps, r.cfg.Out)
	}
	if cause := signalled(ctx); cause != nil {
		serr = r.stopped(cause, steps)
	}
	return nil, r.endEarly(serr)
}

// endEarly records that the run ended before its planned steps because of
// why: summary.json says so (truncated, with the reason) when there is an
// evaluation to summarise. It returns why, joined with a failure to write
// the summary.
func (r *activeRun) endEarly(why error) error {
	r.log.Warn("the run ended before its planned steps", "steps", r.party.Step(), "planned", r.planned) // why is returned
	r.rec.Truncate(why.Error())
	if err := r.reserve.Release(); err != nil {
		r.log.Warn("could not release the reserved disk space", "err", err)
	}
	if _, err := r.rec.Finish(r.party.Step(), time.Since(r.start)); err != nil {
		return errors.Join(why, fmt.Errorf("active: no summary of the truncated run: %w", err))
	}
	return why
}

func partyName(name, def string) string {
	if name != "" {
		return name
	}
	return def
}

// serve handles the training stream until the passive ends the run, with
// the active party's one message loop (active.Serve) over a connection
// that applies the peer timeout and holds r.mu from a message's arrival
// to its answer.
func (r *activeRun) serve(ctx context.Context) error {
	conn := &heldConn{r: r, ctx: ctx}
	err := active.Serve(ctx, conn, r)
	if conn.held {
		conn.held = false
		r.mu.Unlock()
	}
	if err != nil && !errors.Is(err, ErrPeerGone) && ctx.Err() == nil && !conn.recvFailed {
		r.srv.Abort(err) // which logs err with the incident it tells the peer; err is returned
	}
	return err
}

// heldConn is the active party's side of the training stream as
// active.Serve sees it: a receive that waits at most the peer timeout and
// then takes r.mu (so that no control call runs during a step), and a
// reply that releases it.
type heldConn struct {
	r          *activeRun
	ctx        context.Context
	held       bool
	recvFailed bool
}

func (c *heldConn) Recv(ctx context.Context) (*transport.Forward, error) {
	r := c.r
	rctx, cancel := context.WithTimeout(ctx, r.cfg.PeerTimeout)
	f, err := r.srv.Recv(rctx)
	cancel()
	if err != nil {
		c.recvFailed = true
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("%w: no message for %v", ErrPeerGone, r.cfg.PeerTimeout)
		}
		if errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, fmt.Errorf("active: %w", err)
	}
	r.mu.Lock()
	c.held = true
	return f, nil
}

func (c *heldConn) Reply(ctx context.Context, b *transport.Backward) error {
	err := c.r.srv.Reply(ctx, b)
	c.held = false
	c.r.mu.Unlock()
	if err != nil {
		// The passive retries or resumes; the step stands.
		c.r.log.Warn("could not answer", "step", b.Step, "err", err)
	}
	return nil
}

// TrainStep implements active.Handler with the current party (r.mu is
// held).
func (r *activeRun) TrainStep(f *transport.Forward) (*transport.Backward, error) {
	if err := r.started(f); err != nil {
		return nil, err
	}
	if r.saved > r.acked && f.Step >= r.saved {
		// The passive saves its checkpoint before it sends the next
		// training step: both parties hold r.saved.
		if err := r.store.writeAcked(r.saved); err != nil {
			return nil, err
		}
		r.acked = r.saved
		// The pair below the new acknowledged step is all a fallback needs.
		if err := r.store.trim(r.saved); err != nil {
			return nil, err
		}
	}
	r.embedding, r.ids = f.Embedding, f.IDs
	r.stepStart = time.Now()
	if !r.answered.IsZero() {
		r.waitSteps++
		r.waitTime += r.stepStart.Sub(r.answered)
	}
	b, err := r.party.TrainStep(f)
	r.answered = time.Now()
	r.computeSteps++
	r.computeTime += r.answered.Sub(r.stepStart)
	return b, err
}

// EvalBatch implements active.Handler with the current party (r.mu is
// held).
//
// The answer to a round's last message carries the verdict evalDone made:
// keep this evaluation's models, stop training here.
func (r *activeRun) EvalBatch(f *transport.Forward) (*transport.Backward, error) {
	if err := r.started(f); err != nil {
		return nil, err
	}
	r.answered = time.Time{} // the wait across an evaluation is not a training step's
	b, err := r.party.EvalBatch(f)
	if err != nil || !f.Last {
		return b, err
	}
	r.answer(b)
	return b, nil
}

func (r *activeRun) started(f *transport.Forward) error {
	if r.party == nil {
		return fmt.Errorf("active: %v step %d arrived before the ID alignment and resume were done", f.Phase, f.Step)
	}
	return nil
}

// hello starts a new session: a fresh PSI responder (the previous
// session's, if unfinished, removes its spill files).
func (r *activeRun) hello(_ context.Context, peer grpcnet.Hello) error {
	resp, err := newResponder(r.pd.ids())
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.responder != nil {
		_ = r.responder.Close()
	}
	r.responder = resp
	r.peerIDFormat = peer.IDFormat
	r.mu.Unlock()
	r.log.Info("session started", "peer", peer.Party)
	if h := idFormatHint(r.pd.split.Info.IDFormat.String(), peer.IDFormat, "active", "passive"); h != "" {
		r.log.Warn("the parties write their IDs differently" + h)
	}
	return nil
}

// psi answers a PSI round; after the last it aligns the data.
func (r *activeRun) psi(_ context.Context, req *psi.Request) (*psi.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := announcedIDs(req); n >= 0 && r.responder != nil {
		if r.common != nil {
			if n != r.passiveIDs {
				return nil, fmt.Errorf("active: a new session aligns %d IDs, the run's passive party aligned %d: refused (the passive's data cannot change within a run)", n, r.passiveIDs)
			}
			if wait := realignWait(r.realign, time.Now()); wait > 0 {
				r.log.Warn("refusing a realignment: too many sessions", "retry_in", wait.Round(time.Second))
				return nil, grpcnet.TryAgainLater(fmt.Errorf("active: realignments are limited to %d at once and one per %v; try again in %v", realignBurst, realignEvery, wait.Round(time.Second)))
			}
		}
		r.announced = n
	}
	resp, common, err := respondPSI("active", r.responder, req)
	if err != nil {
		return nil, err
	}
	if common == nil { // more rounds to come
		return resp, nil
	}
	if r.common != nil {
		if !slices.Equal(common, r.common) {
			return nil, fmt.Errorf("active: the ID intersection changed between sessions (%d IDs, was %d): the passive's data changed", len(common), len(r.common))
		}
		return resp, nil
	}
	split := r.pd.restrict(common)
	if len(split.Train.IDs) < 2 {
		return nil, fmt.Errorf("active: only %d training examples in the intersection of %d IDs%s", len(split.Train.IDs), len(common),
			idFormatHint(r.pd.split.Info.IDFormat.String(), r.peerIDFormat, "active", "passive"))
	}
	eval, valRows, err := holdOut(&r.cfg, split)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	if err := r.cfg.Config.Validate(); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	if err := writeConfig(&r.cfg); err != nil {
		return nil, err
	}
	r.rec.SetConfig(r.cfg.Config)
	r.rec.SetValRows(valRows)
	r.rec.SetValLabels(eval.Labels[:valRows])
	if w := config.PositivesWarning(r.cfg.Batch, positiveRate(split.Train.Labels)); w.Text != "" && !r.warnedPositives {
		r.log.Warn(w.Text, w.LogArgs()...)
		r.rec.Warn(w.Text, w.Keys...)
		r.warnedPositives = true
	}
	r.common, r.split, r.eval, r.valRows = common, split, eval, valRows
	r.passiveIDs = r.announced
	r.startBaseline()
	r.log.Info("IDs aligned", "intersection", len(common), "train", len(split.Train.IDs), "validation", valRows, "test", len(split.Test.IDs),
		"batch", r.cfg.Batch, "epochs", r.cfg.Epochs, "lr", r.cfg.LR, "auto", r.cfg.Auto)
	return resp, nil
}

// positiveRate is the share of labels that are 1.
func positiveRate(labels []uint8) float64 {
	n := 0
	for _, y := range labels {
		n += int(y)
	}
	return float64(n) / float64(max(len(labels), 1))
}

// startBaseline starts fitting the logistic baseline on the active
// party's own columns (what it gets without the passive party) beside
// training, on one core, as the in-process run does; finish waits for it.
// The fit only reads the aligned splits, which training does not change.
func (r *activeRun) startBaseline() {
	if x := r.split.Train.X; !r.cfg.Baseline || x == nil || x.Image != nil || x.NumCat+x.NumDense == 0 {
		return // no own column (a vertical split may leave it none): no baseline, as in process
	}
	var val *data.Dataset
	if r.valRows > 0 {
		val = data.SelectRows(r.eval, seq(0, r.valRows))
	}
	train, test, rows := r.split.Train, r.split.Test, r.cfg.BaselineRows
	r.baseline = make(chan *rundir.BaselineSummary, 1)
	go func() {
		r.baseline <- rundir.FitBaselineContext(r.baseCtx, train, val, test, rows, rundir.OwnColumns, true)
	}()
}

// checkpoint handles the Checkpoint control call: after it, the active
// party is at step (rolling back to its checkpoint of step if needed) and,
// at a checkpoint step, has saved its checkpoint.
func (r *activeRun) checkpoint(_ context.Context, step int64, holds []int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.split == nil {
		return errors.New("active: checkpoint before the ID alignment")
	}
	var fb *rundir.CheckpointFallback
	if step < r.acked {
		var err error
		if fb, err = r.fallback(step, holds); err != nil {
			return fmt.Errorf("active: refusing to go back to step %d: both parties acknowledged the checkpoint of step %d; the run's record up to it is kept (%w)", step, r.acked, err)
		}
	}
	if fb != nil {
		if err := r.build(step); err != nil {
			return err
		}
		r.srv.ResetOrder()
		if err := r.store.writeAcked(step); err != nil {
			return err
		}
		r.acked = step
		if err := r.store.addFallback(*fb); err != nil {
			return err
		}
		r.rec.AddFallback(*fb)
		r.log.Warn("resuming from an older checkpoint: the acknowledged one is lost on one side", "step", step, "acknowledged", fb.From, "reason", fb.Reason)
		return nil
	}
	if r.party == nil || r.party.Step() != step {
		if step != 0 && !r.store.has(step) {
			have, _ := r.store.steps()
			at := "not started"
			if r.party != nil {
				at = fmt.Sprintf("at step %d", r.party.Step())
			}
			return fmt.Errorf("active: no checkpoint at step %d (have %v; %s)", step, have, at)
		}
		if err := r.build(step); err != nil {
			return err
		}
		r.srv.ResetOrder() // drops a message of the abandoned session, if one is queued
		r.log.Info("resuming", "step", step)
		return nil
	}
	if r.cfg.CheckpointEvery > 0 && step > 0 && step%int64(r.cfg.CheckpointEvery) == 0 {
		return r.saveCheckpoint(step)
	}
	return nil
}

// build makes the party afresh and, for step > 0, restores its checkpoint.
func (r *activeRun) build(step int64) error {
	cfg := &r.cfg
	top, wide, err := cfg.BuildTop(r.split.Train.X)
	if err != nil {
		return err
	}
	def, err := cfg.BuildDefences(r.split.Train)
	if err != nil {
		return err
	}
	sched, err := schedule.New(len(r.split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return err
	}
	aud, err := cfg.NewAuditor()
	if err != nil {
		return err
	}
	if m := aud.ModelAttacks(); len(m) > 0 && step == 0 {
		r.log.Warn("model attacks need the trained bottom model, which only the passive party holds: not run during training; run `splitguard attack completion` on the passive party's directory", "attacks", m)
	}
	enc, err := cfg.Wire()
	if err != nil {
		return err
	}
	party, err := active.New(top, r.split.Train, r.eval, sched, cfg.CutDim(), active.Config{
		Protector: def.Protector, Loss: def.Loss, TrainLabels: def.TrainLabels, TrainTargets: def.TrainTargets, Wide: wide, ACEBins: cfg.ACEBins, Seed: cfg.Seed,
		Observer: r.observe, EvalObserver: r.evalDone, ValRows: r.valRows, WireGradient: enc.Gradient, WireFeedback: cfg.WireFeedback,
		Contribution: cfg.Contribution, LocalSteps: cfg.LocalSteps, LocalCache: cfg.LocalCache, LocalWeightThreshold: cfg.LocalWeightThreshold,
	})
	if err != nil {
		return err
	}
	if r.guard, err = cfg.NewGuard(); err != nil {
		return err
	}
	var kept keptModel
	if step > 0 {
		secs, err := r.store.load(step)
		if err != nil {
			return err
		}
		if err := party.LoadState(bytes.NewReader(secs["active"])); err != nil {
			return err
		}
		if err := aud.UnmarshalBinaryAt(secs["audit"], step); err != nil {
			return err
		}
		if party.Step() != step {
			return fmt.Errorf("active: checkpoint of step %d holds step %d", step, party.Step())
		}
		if err := kept.restore(secs, step); err != nil {
			return err
		}
	}
	if err := r.rec.Rewind(step); err != nil {
		return err
	}
	r.rec.Start(r.split, aud, int64(cfg.Epochs)*int64(sched.BatchesPerEpoch()))
	r.party, r.aud, r.layers = party, aud, audit.LayerNames(cfg.Cut)
	r.kept, r.keep, r.stop, r.stopSent = kept, false, false, false
	r.planned = int64(cfg.Epochs) * int64(sched.BatchesPerEpoch())
	if cfg.MaxSteps > 0 {
		r.planned = min(r.planned, cfg.MaxSteps)
	}
	if step > 0 {
		r.saved = step
	}
	r.epoch, _ = sched.Position(step)
	r.met.resume(step, aud.Leak())
	return nil
}

func (r *activeRun) saveCheckpoint(step int64) error {
	as, err := r.aud.MarshalBinary()
	if err != nil {
		return err
	}
	secs := []ckSection{{"active", r.party.SaveState}, bytesSection("audit", as)}
	if k, ok := r.kept.section(); ok {
		secs = append(secs, k)
	}
	if err := r.store.save(step, secs...); err != nil {
		return err
	}
	r.saved = step
	r.log.Info("checkpoint saved", "step", step)
	return nil
}

// saveFinal writes the top model for serving.
// saveFinal writes the top model for serving: the one of the selected
// evaluation (select: best), else the last.
func (r *activeRun) saveFinal() error {
	return r.kept.write(r.cfg.Out, rundir.TopModelFile, r.party.SaveModel)
}

// observe audits and records one training batch: the cut layer, which is
// what the active party sent.
func (r *activeRun) observe(ob *active.Observation) error {
	scores, err := r.guard.BatchRows(ob.Step, ob.Rows, r.embedding)
	r.rec.ObserveIntegrity(scores)
	for _, a := range r.guard.Raised() {
		r.rec.IntegrityAlarm(a.Detector, a.Step, a.Score, a.Threshold, a.Error())
		r.met.alarm(a.Detector)
	}
	if err != nil {
		return err
	}
	n := len(r.layers)
	grads := make([]*tensor.Matrix, n)
	outs := make([]*tensor.Matrix, n)
	grads[n-1], outs[n-1] = ob.Protected, r.embedding
	clean := ob.Clean
	rec, err := r.rec.Batch(rundir.Observation{Active: ob, Audit: &audit.Batch{Step: ob.Step, Epoch: ob.Epoch, IDs: r.ids,
		Labels: ob.Labels, Layers: r.layers, Grads: grads, Outputs: outs,
		Clean: func() ([]*tensor.Matrix, error) {
			c := make([]*tensor.Matrix, n)
			c[n-1] = clean
			return c, nil
		}}})
	if err != nil {
		return err
	}
	r.met.batch(rec, time.Since(r.stepStart))
	return nil
}

// evalDone records an evaluation and makes the verdict the round's last
// answer carries (evalJudge.judge).
func (r *activeRun) evalDone(res *active.EvalResult) error {
	return r.judge(res, r.cfg.Select, r.party.SaveModel, r.log)
}

// finish writes summary.json like the in-process run (leak keys at the cut
// layer only: that is what the active party sees).
func (r *activeRun) finish() (*rundir.Summary, error) {
	if r.baseline != nil {
		b := <-r.baseline
		r.log.Info(b.Line())
		r.rec.SetBaseline(b)
	}
	s, err := r.rec.Finish(r.party.Step(), time.Since(r.start))
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	for _, w := range s.KeyedWarnings() {
		r.log.Warn(w.Text, w.LogArgs()...)
	}
	if r.computeSteps > 0 {
		// The link's share is this side's wait less the passive's compute
		// (its log), or the passive's wait less this side's compute.
		r.log.Info("time per training step on this side: its compute, and its wait from an answer to the next step (the passive's compute, the round trip and the transfer both ways); the link's share is the wait less the passive's logged compute",
			"compute_ms", msPer(r.computeTime, r.computeSteps), "waiting_ms", msPer(r.waitTime, r.waitSteps), "steps", r.computeSteps)
	}
	return s, nil
}
