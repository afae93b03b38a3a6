package netrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// Options are the parts of a networked run that are not configuration.
type Options struct {
	// Logger receives progress, refusals and connection events
	// (slog.Default() when nil).
	Logger *slog.Logger
	// Ready, when set, is called with the active party's listening address
	// (useful with port 0).
	Ready func(addr string)
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// ErrPeerGone is wrapped by the error a party returns when its peer stayed
// away longer than the peer timeout; what was learned has been saved.
var ErrPeerGone = errors.New("netrun: the peer went away")

// activeRun is the state of the active party's process.
type activeRun struct {
	cfg   Config
	log   *slog.Logger
	pd    *partyData
	srv   *grpcnet.Server
	store store
	met   *activeMetrics
	rec   *recorder

	// mu is held while a message is processed and during control calls,
	// so that a checkpoint or rollback never overlaps a step.
	mu        sync.Mutex
	responder *psi.Responder
	common    []uint64 // the ID intersection, once known
	split     *data.Split
	party     *active.Active
	aud       *audit.Auditor
	layers    []string
	embedding *tensor.Matrix
	ids       []uint64
	epoch     int
	stepStart time.Time
}

// RunActive runs the active party: it loads its data, listens, aligns IDs
// with the passive party, trains and evaluates as the passive drives, and
// writes the run directory cfg.Out (config.yaml, batches.jsonl, eval.jsonl,
// summary.json, top.model). It returns when the passive party ends the run,
// when the run fails, or when the passive stayed away longer than
// cfg.PeerTimeout (an error wrapping ErrPeerGone, after saving a checkpoint).
func RunActive(ctx context.Context, cfg Config, opt Options) (*run.Summary, error) {
	cfg.resolveImages()
	if err := cfg.validate("active"); err != nil {
		return nil, err
	}
	if cfg.CheckpointEvery > 0 {
		for _, a := range run.ExpandAttacks(cfg.Attacks) {
			if a == "memory_norm" || a == "memory_cosine" {
				return nil, fmt.Errorf("active: the epoch-memory attack %s cannot be checkpointed; use --checkpoint-every 0", a)
			}
		}
	}
	log := opt.logger().With("party", "active")
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	if b, err := yaml.Marshal(cfg); err == nil {
		if err := writeFileAtomic(filepath.Join(cfg.Out, "config.yaml"), b); err != nil {
			return nil, err
		}
	}
	pd, err := loadParty(&cfg, true)
	if err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	log.Info("data loaded", "train", len(pd.split.Train.IDs), "test", len(pd.split.Test.IDs))
	if err := pd.saveEncoding(cfg.Out); err != nil {
		return nil, fmt.Errorf("active: %w", err)
	}
	r := &activeRun{cfg: cfg, log: log, pd: pd, store: store{dir: cfg.checkpointDir(), role: "active"}}
	if r.rec, err = openRecorder(cfg.Out); err != nil {
		return nil, err
	}
	defer r.rec.close()

	r.srv, err = listen(&cfg, opt, grpcnet.Handlers{Hello: r.hello, PSI: r.psi, Checkpoint: r.checkpoint,
		Shutdown: func(_ context.Context, reason string) error {
			log.Info("the passive party ends the run", "reason", reason)
			return nil
		}}, "active")
	if err != nil {
		return nil, err
	}
	defer r.srv.Close()
	r.met = newActiveMetrics(cfg, r.srv.Stats)
	if cfg.MetricsAddr != "" {
		stop, addr, err := r.met.serve(cfg.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("active: metrics: %w", err)
		}
		defer stop()
		log.Info("metrics", "url", "http://"+addr+"/metrics")
	}
	if opt.Ready != nil {
		opt.Ready(r.srv.Addr())
	}
	serr := r.serve(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if serr != nil {
		if errors.Is(serr, ErrPeerGone) && r.party != nil {
			if err := r.saveFinal(); err != nil {
				return nil, errors.Join(serr, err)
			}
			if r.cfg.CheckpointEvery > 0 {
				if err := r.saveCheckpoint(r.party.Step()); err != nil {
					return nil, errors.Join(serr, err)
				}
			}
			return nil, fmt.Errorf("active: %w after %d steps; the model is saved in %s", serr, r.party.Step(), r.cfg.Out)
		}
		return nil, serr
	}
	if r.party == nil {
		return nil, errors.New("active: the passive party ended the run before training started")
	}
	if err := r.saveFinal(); err != nil {
		return nil, err
	}
	return r.finish()
}

func partyName(name, def string) string {
	if name != "" {
		return name
	}
	return def
}

// serve handles the training stream until the passive ends the run.
func (r *activeRun) serve(ctx context.Context) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, r.cfg.PeerTimeout)
		f, err := r.srv.Recv(rctx)
		cancel()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("%w: no message for %v", ErrPeerGone, r.cfg.PeerTimeout)
			}
			return fmt.Errorf("active: %w", err)
		}
		r.mu.Lock()
		b, err := r.handle(f)
		if err != nil {
			r.mu.Unlock()
			r.log.Error("refusing a message; ending the run", "err", err)
			r.srv.Abort(err)
			return err
		}
		err = r.srv.Reply(ctx, b)
		r.mu.Unlock()
		if err != nil {
			r.log.Warn("could not answer", "step", f.Step, "err", err)
		}
	}
}

// handle processes one message; r.mu is held.
func (r *activeRun) handle(f *transport.Forward) (*transport.Backward, error) {
	if r.party == nil {
		return nil, fmt.Errorf("active: %v step %d arrived before the ID alignment and resume were done", f.Phase, f.Step)
	}
	switch f.Phase {
	case transport.Train:
		r.embedding, r.ids = f.Embedding, f.IDs
		r.stepStart = time.Now()
		return r.party.TrainStep(f)
	case transport.Eval:
		return r.party.EvalBatch(f)
	}
	return nil, fmt.Errorf("active: message of unknown phase %v", f.Phase)
}

// hello starts a new session: a fresh PSI responder.
func (r *activeRun) hello(_ context.Context, peer grpcnet.Hello) error {
	resp, err := psi.NewResponder(psi.Uint64Keys(r.pd.ids()), nil)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.responder = resp
	r.mu.Unlock()
	r.log.Info("session started", "peer", peer.Party)
	return nil
}

// psi answers a PSI round; after the last it aligns the data.
func (r *activeRun) psi(_ context.Context, req *psi.Request) (*psi.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
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
		return nil, fmt.Errorf("active: only %d training examples in the intersection of %d IDs", len(split.Train.IDs), len(common))
	}
	r.common, r.split = common, split
	r.log.Info("IDs aligned", "intersection", len(common), "train", len(split.Train.IDs), "test", len(split.Test.IDs))
	return resp, nil
}

// checkpoint handles the Checkpoint control call: after it, the active
// party is at step (rolling back to its checkpoint of step if needed) and,
// at a checkpoint step, has saved its checkpoint.
func (r *activeRun) checkpoint(_ context.Context, step int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.split == nil {
		return errors.New("active: checkpoint before the ID alignment")
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
	top, wide, err := newTop(cfg, r.split.Train.X)
	if err != nil {
		return err
	}
	prot, dcor, lossLabels, err := run.BuildProtection(&cfg.Config, r.split.Train)
	if err != nil {
		return err
	}
	sched, err := schedule.New(len(r.split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return err
	}
	aud, err := audit.New(run.ExpandAttacks(cfg.Attacks), cfg.PositivesMinority, cfg.Seed)
	if err != nil {
		return err
	}
	party, err := active.New(top, r.split.Train, r.split.Test, sched, cfg.CutDim(), active.Config{
		Protector: prot, DCor: dcor, TrainLabels: lossLabels, Wide: wide, ACEBins: cfg.ACEBins, Seed: cfg.Seed,
		Observer: r.observe, EvalObserver: r.evalDone,
	})
	if err != nil {
		return err
	}
	if step > 0 {
		secs, err := r.store.load(step)
		if err != nil {
			return err
		}
		if err := party.LoadState(bytes.NewReader(secs["active"])); err != nil {
			return err
		}
		if err := aud.UnmarshalBinary(secs["audit"]); err != nil {
			return err
		}
		if party.Step() != step {
			return fmt.Errorf("active: checkpoint of step %d holds step %d", step, party.Step())
		}
	}
	if err := r.rec.rewind(step); err != nil {
		return err
	}
	r.party, r.aud, r.layers = party, aud, audit.LayerNames(cfg.Cut)
	r.epoch, _ = sched.Position(step)
	r.met.resume(step, aud.Leak())
	return nil
}

func (r *activeRun) saveCheckpoint(step int64) error {
	var st bytes.Buffer
	if err := r.party.SaveState(&st); err != nil {
		return err
	}
	as, err := r.aud.MarshalBinary()
	if err != nil {
		return err
	}
	if err := r.store.save(step, map[string][]byte{"active": st.Bytes(), "audit": as}); err != nil {
		return err
	}
	r.log.Info("checkpoint saved", "step", step)
	return nil
}

// saveFinal writes the top model for serving.
func (r *activeRun) saveFinal() error {
	var b bytes.Buffer
	if err := r.party.SaveModel(&b); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(r.cfg.Out, "top.model"), b.Bytes())
}

// observe audits one training batch (cut layer) and records it.
func (r *activeRun) observe(ob *active.Observation) error {
	n := len(r.layers)
	grads := make([]*tensor.Matrix, n)
	outs := make([]*tensor.Matrix, n)
	grads[n-1], outs[n-1] = ob.Protected, r.embedding
	clean := ob.Clean
	leak, err := r.aud.Observe(&audit.Batch{Step: ob.Step, Epoch: ob.Epoch, IDs: r.ids, Labels: ob.Labels,
		Layers: r.layers, Grads: grads, Outputs: outs,
		Clean: func() ([]*tensor.Matrix, error) {
			c := make([]*tensor.Matrix, n)
			c[n-1] = clean
			return c, nil
		}})
	if err != nil {
		return err
	}
	pos := 0
	for _, y := range ob.Labels {
		pos += int(y)
	}
	rec := run.BatchRecord{Step: ob.Step, Epoch: ob.Epoch, Loss: ob.Loss, Positives: pos, Size: len(ob.Labels),
		Leak: maps.Clone(leak), ProtectMS: float64(ob.ProtectTime.Microseconds()) / 1000}
	if r.cfg.DCorAlpha > 0 {
		v := ob.DCorLoss
		rec.DCorLoss = &v
	}
	if len(ob.Stats) > 0 {
		rec.Protection = maps.Clone(ob.Stats)
	}
	if err := r.rec.batch(rec); err != nil {
		return err
	}
	r.met.batch(rec, time.Since(r.stepStart))
	return nil
}

func (r *activeRun) evalDone(res *active.EvalResult) error {
	e := run.EvalRecord{Step: res.Step, TestAUC: res.AUC, TestLoss: res.Loss, ACE: res.ACE}
	if err := r.rec.eval(e); err != nil {
		return err
	}
	r.met.eval(e)
	r.log.Info("evaluation", "step", e.Step, "test_auc", e.TestAUC, "test_loss", e.TestLoss, "ace", e.ACE)
	return nil
}

// finish writes summary.json like the in-process run (leak keys at the cut
// layer only: that is what the active party sees).
func (r *activeRun) finish() (*run.Summary, error) {
	rec := r.rec
	if len(rec.evalsSeen) == 0 {
		return nil, errors.New("active: no evaluation was recorded")
	}
	last := rec.evalsSeen[len(rec.evalsSeen)-1]
	steps := r.party.Step()
	elapsed := time.Since(rec.start)
	train := r.split.Train
	examples := int64(0)
	if steps > 0 {
		examples = min(steps*int64(r.cfg.Batch), int64(r.cfg.Epochs)*int64(len(train.IDs)))
	}
	pos := 0
	for _, y := range train.Labels {
		pos += int(y)
	}
	s := &run.Summary{
		TestAUCBest: rec.best.TestAUC, TestAUCFinal: last.TestAUC, BestStep: rec.best.Step,
		TestLossFinal: last.TestLoss, TestLossNote: "mean binary cross-entropy on the test split, without regularisers",
		ACEFinal: last.ACE, ACEBest: rec.best.ACE, ACEBins: r.cfg.ACEBins, TrainLossFinal: rec.lastLoss,
		Steps: steps, Epochs: r.cfg.Epochs, Examples: examples, Seconds: elapsed.Seconds(),
		Leak: r.aud.Summary(), TrainRows: len(train.IDs), TestRows: len(r.split.Test.IDs),
		TrainPosRate: float64(pos) / float64(max(len(train.IDs), 1)), BadRowsSkipped: r.split.Info.BadRows,
		Engine: tensor.Default.Name(), Protect: r.cfg.Protect,
		Truncated: r.cfg.MaxSteps > 0 && steps < int64(r.cfg.Epochs)*int64((len(train.IDs)+r.cfg.Batch-1)/r.cfg.Batch),
	}
	if elapsed > 0 {
		s.ExamplesPerS = float64(examples) / elapsed.Seconds()
	}
	if steps > 0 {
		s.ProtectMSMean = rec.protMS / float64(steps)
		s.StepMSMean = 1000 * elapsed.Seconds() / float64(steps)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(r.cfg.Out, "summary.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	return s, nil
}
