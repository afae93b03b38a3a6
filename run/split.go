package run

import (
	"context"
	"fmt"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/dump"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/inproc"
)

// splitRun is a run with one passive party (trainSplit): the shared
// runBase, both parties' views and models, what the passive party may do
// besides honest training (tamper, watch for a hijack, plant a backdoor),
// the attacks of an evaluation round and the joiner that records each
// step.
type splitRun struct {
	runBase
	pv, av *view
	// pEval is one evaluation round's rows at the passive party.
	pEval  *data.Dataset
	bottom model.Bottom
	top    model.Top
	wide   bool

	tamper      integrity.Tamper
	hijackCheck func(int64, *tensor.Matrix) error
	bd          integrity.Backdoor
	known       []uint64 // the backdoor's known rows of the target class

	evalAttacks  func() (map[string]float64, error)
	tunedChoices func() map[string]string
	featAttacks  func() (map[string]float64, error)
	hijack       active.Hijacker

	j   *joiner
	act *active.Active
	pas *passive.Passive
}

// setUp builds the models, the run's shared parts (runBase.open), the
// passive party's evaluation rows and misbehaviour, the joiner (and the
// dump it writes), the attacks of an evaluation round and the model
// selection.
func (s *splitRun) setUp() error {
	cfg := s.cfg
	var err error
	if s.bottom, s.top, s.wide, err = cfg.BuildSplitModels(s.pv.train.X, s.av.train.X); err != nil {
		return err
	}
	if err := s.open(s.av); err != nil {
		return err
	}
	s.pEval = s.eval // without a split both parties read the same rows: no second copy
	if cfg.VerticalSplit() {
		if s.pEval, err = s.pv.evalRows(); err != nil {
			return err
		}
	}
	if s.tamper, err = cfg.NewTamper(); err != nil {
		return err
	}
	if s.hijackCheck, err = cfg.NewHijackCheck(); err != nil {
		return err
	}
	if s.bd, s.known, err = newBackdoor(cfg, s.pv, s.av); err != nil {
		return err
	}
	s.j = &joiner{rec: s.rec, bottom: s.bottom, guard: s.grd}
	if cfg.Dump != "" {
		if s.j.dump, err = dump.NewWriter(cfg.Dump, cfg.DumpBatches); err != nil {
			return err
		}
	}
	if s.evalAttacks, s.tunedChoices, err = modelAttacks(*cfg, s.pv.split(), s.bottom); err != nil {
		return err
	}
	if s.featAttacks, s.hijack, err = featureAttacks(*cfg, s.pv, s.av, s.bottom, s.top, s.wide); err != nil {
		return err
	}
	s.sel = &selection{keep: cfg.Select == config.SelectBest, bottom: s.bottom, top: s.top}
	return nil
}

// close closes the dump, then the run's shared parts.
func (s *splitRun) close() {
	if s.j != nil && s.j.dump != nil {
		s.j.dump.Close()
	}
	s.runBase.close()
}

// buildParties builds both parties, each with its observer in the
// joiner, and starts the recorder.
func (s *splitRun) buildParties() error {
	acfg, pcfg, err := partyConfigs(s.cfg, s.def, s.wide, s.val, s.rec)
	if err != nil {
		return err
	}
	acfg.Observer, acfg.EvalObserver, acfg.Hijack = s.j.active, s.onEval, s.hijack
	if s.act, err = active.New(s.top, s.av.train, s.eval, s.sched, s.bottom.CutDim(), acfg); err != nil {
		return err
	}
	if s.cfg.Staleness > 0 {
		s.j.stale = newStaleViews(s.cfg.Staleness)
	}
	pcfg.Observer, pcfg.Send, pcfg.Check, pcfg.Cheat = s.j.passive, s.tamper, s.hijackCheck, s.bd
	if s.pas, err = passive.New(s.bottom,
		passive.Split{IDs: s.pv.train.IDs, X: s.pv.train.X},
		passive.Split{IDs: s.pEval.IDs, X: s.pEval.X}, s.sched, pcfg); err != nil {
		return err
	}
	s.rec.Start(s.av.split(), s.aud, s.pas.TotalSteps())
	s.j.layers = audit.LayerNames(s.cfg.Cut)
	return nil
}

// onEval records an evaluation round at the active party: the model and
// feature attacks on the passive's bottom, the record, the selection and
// the guard.
func (s *splitRun) onEval(res *active.EvalResult) error {
	// Every training step before this evaluation is recorded first.
	if err := s.j.queue.wait(); err != nil {
		return err
	}
	// The passive party waits for the answer to its last evaluation
	// message meanwhile: the model attacks may use its bottom.
	figs, err := s.evalAttacks()
	if err != nil {
		return fmt.Errorf("evaluation at step %d: %w", res.Step, err)
	}
	s.rec.SetTunedModel(s.tunedChoices())
	feats, err := s.featAttacks()
	if err != nil {
		return fmt.Errorf("evaluation at step %d: %w", res.Step, err)
	}
	e, err := s.rec.EvalWithFeatures(res, figs, feats)
	if err != nil {
		return err
	}
	return s.evaluated(e)
}

// train runs the steps: both parties over an in-process pipe, the
// active on its own goroutine (cancel stops the passive when it fails),
// each step recorded through the audit queue (inline under the test
// option recordInline). It returns the training's wall time and the
// first of the active's, the recording's and the passive's errors; with
// none, it gives back the disk space held.
func (s *splitRun) train(ctx context.Context, cancel context.CancelFunc) (time.Duration, error) {
	var dumpBatch func(*audit.Batch) error
	if s.j.dump != nil {
		dumpBatch = s.j.dump.Batch
	}
	if !s.opt.recordInline {
		s.j.queue, s.j.needClean = newAuditQueue(s.rec, dumpBatch), s.aud.NeedsOracle()
		// Copy the layers' outputs only for an attack or a dump that reads them.
		s.j.queue.outputs = s.aud.NeedsOutputs() || dumpBatch != nil
	}
	pConn, aConn := inproc.Pipe()
	activeErr := serveActive(ctx, s.act, aConn, func(error) { cancel() })
	start := time.Now()
	perr := s.pas.Run(ctx, pConn)
	pConn.Close()
	aerr := <-activeErr
	if qerr := s.j.queue.close(); aerr == nil && perr == nil {
		aerr = qerr
	}
	elapsed := time.Since(start)
	runErr := aerr
	if runErr == nil && perr != nil {
		runErr = perr
		if ctx.Err() != nil && s.j.err != nil {
			runErr = s.j.err
		}
	}
	if runErr == nil {
		runErr = s.reserve.Release()
	}
	return elapsed, runErr
}

// recordBackdoor puts the backdoor's outcome, on the models as they are
// at the end, in the summary and the log (nothing for an honest party).
func (s *splitRun) recordBackdoor() error {
	return recordBackdoor(s.cfg, s.rec, s.bd, s.known, s.bottom, s.top, s.wide, s.pv, s.av, s.opt)
}
