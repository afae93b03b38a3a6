package netrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/psi"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/transport/grpcnet"
)

// passiveRun is the state of the passive party's process.
type passiveRun struct {
	cfg    Config
	opt    Options
	pd     *partyData
	client *grpcnet.Client
	store  store
	split  *data.Split
	eval   *data.Dataset // validation rows, then test rows
	// hello is the fingerprint of the configuration as given, before the
	// settings left to the data were resolved: the one every session's
	// Hello sends (a restarted active party compares it with its own).
	hello  grpcnet.Fingerprint
	common []uint64
	party  *passive.Passive
	// kept is the bottom of the evaluation the active party selected.
	kept keptModel
	red  *redTeam
	feat *featureTeam // the red team's audit of the passive's features (nil: none)
	// progress is when the run last made progress (a step, a session).
	progress time.Time
}

// PassiveResult reports a finished passive run.
type PassiveResult struct {
	Steps    int64
	Sessions int
	Stats    grpcnet.Stats
	// Timing splits the training steps of the last session's party (since
	// its start or restore) into this party's compute and its wait for the
	// active party's answers.
	Timing passive.Timing
}

// RunPassive runs the passive party: it loads its data (without labels),
// connects to the active party, aligns IDs by PSI, resumes from the last
// common checkpoint and trains, checkpointing every cfg.CheckpointEvery
// steps. A lost connection or a restarted active party starts a new session
// (with backoff); after cfg.PeerTimeout without progress the run ends with
// an error wrapping ErrPeerGone, the model saved. The bottom model is
// written to cfg.Out/bottom.model at the end.
func RunPassive(ctx context.Context, cfg Config, opt Options) (*PassiveResult, error) {
	cfg.resolve()
	if err := cfg.prepare("passive", opt); err != nil {
		return nil, err
	}
	if cfg.Backdoor != "" && len(cfg.BackdoorKnownIDs) == 0 {
		// The known target rows come as IDs: this side holds no label.
		return nil, config.Keyed(fmt.Errorf("passive: a networked passive party's backdoor (key backdoor) needs the IDs of the target class's known rows (key backdoor_known_ids)"), "backdoor", "backdoor_known_ids")
	}
	log := opt.logger().With("party", "passive")
	if n, e := cfg.CheckpointEvery, cfg.EvalEvery; cfg.Staleness > 0 && n > 0 && (e <= 0 || n%e != 0) {
		log.Warn("the pipeline drains at every checkpoint as well as at every evaluation: the records differ from an in-process run's unless the checkpoint interval (key checkpoint_every) is a multiple of the evaluation interval (key eval_every)",
			"staleness", cfg.Staleness, "checkpoint_every", n, "eval_every", e, "key", "checkpoint_every", "key", "eval_every")
	}
	lock, err := openOut(&cfg, opt, "passive", log)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	pd, err := loadPassive(ctx, &cfg, opt, log)
	if err != nil {
		return nil, err
	}
	client, err := dial(&cfg, opt, "passive", 0)
	if err != nil {
		return nil, err
	}
	p := &passiveRun{cfg: cfg, opt: opt, pd: pd, client: client, store: store{dir: cfg.checkpointDir(), role: "passive", keep: cfg.KeepCheckpoints}, progress: time.Now(),
		hello: cfg.fingerprint()}
	defer p.closeTeams()
	if err := p.openTeams(log); err != nil {
		client.Close()
		return nil, err
	}
	res := &PassiveResult{}
	if err := p.sessions(ctx, res, log); err != nil {
		return nil, err
	}
	return p.end(ctx, res, log)
}

// loadPassive prepares the passive party's run directory (orphans
// removed, config.yaml and the data's encoding written) and loads its
// data without labels; a failure to load is told to the active party.
func loadPassive(ctx context.Context, cfg *Config, opt Options, log *slog.Logger) (*partyData, error) {
	if err := cleanOrphans(log, cfg.Out, cfg.checkpointDir()); err != nil {
		return nil, fmt.Errorf("passive: %w", err)
	}
	pd, err := loadParty(cfg, false)
	if err != nil {
		err = fmt.Errorf("passive: %w", err)
		tellRefusal(ctx, cfg, opt, log, err)
		return nil, err
	}
	log.Info("data loaded", "train", len(pd.split.Train.IDs), "test", len(pd.split.Test.IDs))
	if tf, ok := data.LookupTableFormat(cfg.Format); ok && tf.LabelCol == "" && cfg.Label == "" && len(cfg.loadColumns) == 0 {
		// With columns named, only those are read: the label is not among
		// them unless the user named it.
		log.Warn("no label column named (key label): every column of this file is a feature; if the file holds the labels, "+
			"name that column so that it is dropped, or ignore it (key ignore)", "key", "label", "key", "ignore")
	}
	if err := writeConfig(cfg); err != nil {
		return nil, err
	}
	if err := pd.saveEncoding(cfg.Out); err != nil {
		return nil, fmt.Errorf("passive: %w", err)
	}
	return pd, nil
}

// openTeams opens the red team's logs (with key red_team): the label-free
// audit of what this party receives and, with feature attacks, that of its
// own features. closeTeams closes them.
func (p *passiveRun) openTeams(log *slog.Logger) error {
	cfg := &p.cfg
	if !cfg.RedTeam {
		return nil
	}
	red, err := newRedTeam(filepath.Join(cfg.Out, "redteam.jsonl"), cfg.Attacks, cfg.PositivesMinority)
	if err != nil {
		return err
	}
	p.red = red
	log.Info("red team: the attacks that need labels are left out", "left_out", p.red.leftOut())
	if len(cfg.FeatureAttacks) > 0 {
		feat, err := newFeatureTeam(filepath.Join(cfg.Out, RedTeamFeaturesFile), cfg.FeatureAttacks)
		if err != nil {
			return err
		}
		p.feat = feat
	}
	return nil
}

// closeTeams closes the red team's logs that openTeams opened.
func (p *passiveRun) closeTeams() {
	if p.feat != nil {
		p.feat.close()
	}
	if p.red != nil {
		p.red.close()
	}
}

// sessions runs sessions until one trains to the end, starting a new one
// (with backoff) after a lost session; it ends the run, closing the
// client, on another error, on a signal, or once the peer made no
// progress for cfg.PeerTimeout (the model saved, an error wrapping
// ErrPeerGone).
func (p *passiveRun) sessions(ctx context.Context, res *PassiveResult, log *slog.Logger) error {
	cfg, client := &p.cfg, p.client
	backoff := 200 * time.Millisecond
	for {
		res.Sessions++
		err := p.session(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !grpcnet.NeedsNewSession(err) {
			if cause := signalled(ctx); cause != nil {
				err = p.stopped(cause)
			}
			abortSession(client, err) // err is returned, not logged
			client.Close()
			return err
		}
		if time.Since(p.progress) > cfg.PeerTimeout {
			client.Close()
			if p.party != nil {
				if serr := p.saveFinal(); serr != nil {
					return errors.Join(err, serr)
				}
				return fmt.Errorf("passive: %w: no progress for %v (last error: %v); the model after %d steps is saved in %s",
					ErrPeerGone, cfg.PeerTimeout, err, p.party.Step(), cfg.Out)
			}
			return fmt.Errorf("passive: %w: no progress for %v: %v", ErrPeerGone, cfg.PeerTimeout, err)
		}
		log.Warn("session lost; starting a new one", "in", backoff, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			client.Close()
			if cause := signalled(ctx); cause != nil {
				return p.stopped(cause)
			}
			return ctx.Err()
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// end ends a run trained to its end: it logs the time per step, saves the
// bottom model, tells the active party and closes the connection.
func (p *passiveRun) end(ctx context.Context, res *PassiveResult, log *slog.Logger) (*PassiveResult, error) {
	client := p.client
	res.Steps = p.party.Step()
	res.Timing = p.party.Timing()
	if t := res.Timing; t.Steps > 0 {
		log.Info("time per training step: this party's compute, and its wait for the active party's answer (the active's compute — its log gives it —, the round trip and the transfer both ways)",
			"compute_ms", msPer(t.Compute, t.Steps), "waiting_ms", msPer(t.Exchange, t.Steps), "steps", t.Steps)
	}
	if err := p.saveFinal(); err != nil {
		client.Close()
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, endShutdownTimeout)
	err := client.Shutdown(sctx, "")
	cancel()
	res.Stats = client.Stats()
	if cerr := client.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// endShutdownTimeout bounds the Shutdown that ends a session cleanly: it
// waits for a link down for a moment (grpcnet.Client.Shutdown), not for a
// peer that is gone.
const endShutdownTimeout = 30 * time.Second

// refusalConnectTimeout is how long a passive party that cannot take part
// waits for the active party to answer, to tell it so.
const refusalConnectTimeout = 3 * time.Second

// tellRefusal tells the active party, if it answers within
// refusalConnectTimeout, that this party ends the run before it began
// because of err (its data could not be loaded), so that the active ends
// at once with the reason instead of waiting for the peer timeout. It is
// best effort: a failure is only logged.
func tellRefusal(ctx context.Context, cfg *Config, opt Options, log *slog.Logger, cause error) {
	client, err := dial(cfg, opt, "passive", refusalConnectTimeout)
	if err == nil {
		defer client.Close()
		hctx, cancel := context.WithTimeout(ctx, refusalConnectTimeout+2*time.Second)
		defer cancel()
		if _, err = client.Hello(hctx, grpcnet.Hello{Party: partyName(cfg.Name, "passive"), Config: cfg.fingerprint()}); err == nil {
			abortSession(client, cause)
			log.Info("told the active party that this party cannot take part")
			return
		}
	}
	log.Warn("could not tell the active party that this party cannot take part", "err", err)
}

// session runs one session: Hello, PSI, resume, training to the end.
func (p *passiveRun) session(ctx context.Context) error {
	log := p.opt.logger().With("party", "passive")
	own := p.pd.split.Info.IDFormat.String()
	remote, err := p.client.Hello(ctx, grpcnet.Hello{Party: partyName(p.cfg.Name, "passive"), Config: p.hello, IDFormat: own})
	if err != nil {
		if remote != nil && !bytes.Equal(remote.Config.Digest, p.hello.Digest) {
			err = config.Keyed(fmt.Errorf("%w (%s)", err, p.cfg.digestHint()), partiesHintKeys(&p.cfg)...)
		}
		return err
	}
	keys, err := alignIDs(p.pd.ids(), func(r *psi.Request) (*psi.Response, error) { return p.client.PSI(ctx, r) })
	if err != nil {
		return fmt.Errorf("passive: private ID alignment: %w", err)
	}
	if len(keys) == 0 {
		return fmt.Errorf("passive: no ID in the intersection%s", idFormatHint(own, remote.IDFormat, "passive", "active"))
	}
	if p.common == nil {
		split := p.pd.restrict(keys)
		eval, valRows, err := holdOut(&p.cfg, split)
		if err != nil {
			return fmt.Errorf("passive: %w", err)
		}
		if err := p.cfg.Config.Validate(); err != nil {
			return fmt.Errorf("passive: %w", err)
		}
		if err := writeConfig(&p.cfg); err != nil {
			return err
		}
		p.common, p.split, p.eval = keys, split, eval
		log.Info("IDs aligned", "intersection", len(keys), "train", len(p.split.Train.IDs), "validation", valRows, "test", len(p.split.Test.IDs),
			"batch", p.cfg.Batch, "epochs", p.cfg.Epochs, "lr", p.cfg.LR, "auto", p.cfg.Auto)
	} else if !slices.Equal(keys, p.common) {
		return fmt.Errorf("passive: the ID intersection changed between sessions (%d IDs, was %d)", len(keys), len(p.common))
	}
	p.progress = time.Now()
	if err := p.resume(ctx); err != nil {
		return err
	}
	return p.party.Train(ctx, p.client)
}

// resume agrees with the active party on the step to continue from: the
// current step, else the newest common checkpoint, else step 0. Each
// proposal lists the checkpoints this party holds intact, so that the
// active may let it fall back behind the acknowledged step when one
// party's copy of that checkpoint is lost (activeRun.fallback).
func (p *passiveRun) resume(ctx context.Context) error {
	log := p.opt.logger().With("party", "passive")
	var cands []int64
	if p.party != nil {
		cands = append(cands, p.party.Step())
	}
	var holds []int64
	if p.cfg.CheckpointEvery > 0 {
		var err error
		if holds, err = p.store.intact(log); err != nil {
			return err
		}
		holds = holds[max(0, len(holds)-grpcnet.MaxHolds):]
		for i := len(holds) - 1; i >= 0; i-- {
			cands = append(cands, holds[i])
		}
	}
	cands = append(cands, 0)
	tried := map[int64]bool{}
	var last error
	for _, s := range cands {
		if tried[s] {
			continue
		}
		tried[s] = true
		// Verify a checkpoint before proposing it: one that does not load
		// is skipped for the next older one.
		var party *passive.Passive
		var kept keptModel
		if p.party == nil || p.party.Step() != s {
			var err error
			if party, kept, err = p.build(s); err != nil {
				log.Warn("skipping a checkpoint that does not verify; falling back to an older one", "step", s, "err", err)
				last = err
				continue
			}
		}
		if err := p.client.Checkpoint(ctx, s, holds...); err != nil {
			if grpcnet.NeedsNewSession(err) {
				return err
			}
			log.Info("the active party cannot resume here", "step", s, "err", err)
			last = err
			continue
		}
		if party != nil {
			if p.red != nil {
				if err := p.red.rewind(s); err != nil {
					return err
				}
			}
			if p.feat != nil {
				if err := p.feat.rewind(s); err != nil {
					return err
				}
			}
			p.party, p.kept = party, kept
		}
		log.Info("resuming", "step", s)
		return nil
	}
	return fmt.Errorf("passive: no step to resume from: %w", last)
}

// build makes the party afresh and, for step > 0, restores its checkpoint
// and the bottom kept by then.
func (p *passiveRun) build(step int64) (*passive.Passive, keptModel, error) {
	cfg := &p.cfg
	var kept keptModel
	bottom, err := newBottom(cfg, p.split.Train.X)
	if err != nil {
		return nil, kept, err
	}
	sched, err := schedule.New(len(p.split.Train.IDs), cfg.Batch, cfg.Seed)
	if err != nil {
		return nil, kept, err
	}
	enc, err := cfg.Wire()
	if err != nil {
		return nil, kept, err
	}
	pc := passive.Config{Epochs: cfg.Epochs, MaxSteps: cfg.MaxSteps, EvalEvery: cfg.EvalEvery, EvalBatch: cfg.EvalBatch,
		WireEmbedding: enc.Embedding, AfterStep: p.afterStep,
		Staleness: cfg.Staleness, StalenessPrediction: cfg.StalenessPrediction, DrainEvery: cfg.CheckpointEvery, LocalSteps: cfg.LocalSteps, LocalCache: cfg.LocalCache, LocalWeightThreshold: cfg.LocalWeightThreshold, Kept: func(step int64) error { return p.kept.keep(step, p.party.SaveModel) }}
	tamper, err := cfg.NewTamper()
	if err != nil {
		return nil, kept, err
	}
	pc.Send = tamper                                      // nil for an honest party
	if pc.Check, err = cfg.NewHijackCheck(); err != nil { // the watch for a hijacking active party
		return nil, kept, err
	}
	if cfg.Backdoor != "" {
		bd, err := cfg.NewBackdoor(cfg.BackdoorKnownIDs, p.split.Train.IDs, p.split.Train.X)
		if err != nil {
			return nil, kept, err
		}
		pc.Cheat = bd
	}
	if p.red != nil {
		pc.Observer = p.red.observe
		p.red.setBatchesPerEpoch(sched.BatchesPerEpoch())
	}
	if p.feat != nil {
		// The training rows are without the validation rows (holdOut).
		if err := p.feat.start(cfg, p.split.Train, p.split.Test); err != nil {
			return nil, kept, err
		}
		pc.EvalObserver = func(step int64) error { return p.feat.observe(bottom, step) }
	}
	party, err := passive.New(bottom, passive.Split{IDs: p.split.Train.IDs, X: p.split.Train.X},
		passive.Split{IDs: p.eval.IDs, X: p.eval.X}, sched, pc)
	if err != nil {
		return nil, kept, err
	}
	if step > 0 {
		secs, err := p.store.load(step)
		if err != nil {
			return nil, kept, err
		}
		if err := party.LoadState(bytes.NewReader(secs["passive"])); err != nil {
			return nil, kept, fmt.Errorf("checkpoint %s: %w", p.store.path(step), err)
		}
		if party.Step() != step {
			return nil, kept, fmt.Errorf("passive: checkpoint of step %d holds step %d", step, party.Step())
		}
		if err := kept.restore(secs, step); err != nil {
			return nil, kept, err
		}
	}
	return party, kept, nil
}

// afterStep checkpoints at every checkpoint step: the active party first
// (Checkpoint call), then the passive.
func (p *passiveRun) afterStep(ctx context.Context, step int64) error {
	p.progress = time.Now()
	if p.opt.afterPassiveStep != nil {
		if err := p.opt.afterPassiveStep(step); err != nil {
			return err
		}
	}
	n := int64(p.cfg.CheckpointEvery)
	if n <= 0 || step%n != 0 || step >= p.party.TotalSteps() {
		return nil
	}
	if err := p.client.Checkpoint(ctx, step); err != nil {
		return err
	}
	secs := []ckSection{{"passive", p.party.SaveState}}
	if k, ok := p.kept.section(); ok {
		secs = append(secs, k)
	}
	if err := p.store.save(step, secs...); err != nil {
		return err
	}
	if p.opt.afterPassiveSaved != nil {
		return p.opt.afterPassiveSaved(step)
	}
	return nil
}

// saveFinal writes the bottom model.
// (the one of the evaluation the active party selected, else the last).
func (p *passiveRun) saveFinal() error {
	return p.kept.write(p.cfg.Out, rundir.BottomModelFile, p.party.SaveModel)
}
