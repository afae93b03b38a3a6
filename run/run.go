// Package run is the in-process simulation of split learning: it loads the
// data, builds both parties (package config), connects them through
// transport/inproc, and records every step (package rundir), whose audit
// alone sees both the labels and what the passive party received.
package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/dump"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// Options are the parts of a run that are not configuration: where
// progress goes.
type Options struct {
	// Logger receives the run's progress lines and warnings, a warning
	// about a configuration key with the attribute key=NAME (nil: none).
	Logger *slog.Logger
	// Progress, when set, is told about every batch (for a progress bar).
	Progress func(p rundir.Progress)
	// OnBatch, when set, is called with every batches.jsonl record after
	// it is written (its Leak map is reused afterwards: copy what you keep).
	OnBatch func(rundir.BatchRecord)
	// OnEval, when set, is called with every eval.jsonl record after it
	// is written.
	OnEval func(rundir.EvalRecord)
	// Force lets the run replace another run in cfg.Out (a finished run,
	// or one of another configuration: rundir.CheckReuse), which is
	// otherwise refused before anything is written.
	Force bool
	// recordInline makes trainSplit record each step on the passive's
	// goroutine, as before the queue (a test compares the two).
	recordInline bool
	// sent, when set, is shown every message each passive party of a run
	// of several sends, after its free-riding mode (tests; called on the
	// party's goroutine, e valid during the call only).
	sent func(party int, step int64, e *tensor.Matrix, train bool)
}

// Train runs one in-process split-training run as cfg describes, writing
// the run directory cfg.Out, and returns its summary. The settings left
// to the data are chosen once the training rows are known
// (config.Config.ResolveForData); config.yaml holds the resolved values.
//
// The run holds cfg.Out's lock (rundir.Lock) from before it reads the
// directory until it returns: a directory in use by another process is
// refused (a *rundir.LockedError) untouched. So is a directory holding
// another run (an error wrapping rundir.ErrOtherRun) unless opt.Force; an
// interrupted run of the same configuration is run again from the start.
// When ctx is cancelled with a *rundir.Stopped cause (a signal), the
// models and a summary marked truncated, naming the signal, are saved,
// and the error wraps the cause.
func Train(ctx context.Context, cfg config.Config, opt Options) (*rundir.Summary, error) {
	cfg.Layers = slices.Clone(cfg.Layers)
	cfg.Resolve()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lock, err := rundir.Lock(cfg.Out)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := clearRunDir(cfg, opt); err != nil {
		return nil, err
	}
	split, train, val, err := loadRows(&cfg, opt)
	if err != nil {
		return nil, err
	}
	// A run that fails or is cancelled abandons the baseline fitted beside
	// it (startBaseline).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.MultiParty() {
		return trainParties(ctx, cfg, split, train, val, opt)
	}
	pv, av, err := partyViews(&cfg, split, train, val)
	if err != nil {
		return nil, err
	}
	if cfg.VerticalSplit() {
		logf(opt.logger(), "vertical split: the passive party holds %v, the active party %v", pv.train.X.ColumnNames(), av.train.X.ColumnNames())
	}
	return trainSplit(ctx, cfg, pv, av, startBaseline(ctx, cfg, opt, split, av), opt)
}

// trainSplit trains the passive party's view pv and the active party's
// av and records the run; base, when non-nil, waits for the baseline
// fitted beside training (called once, before the summary). Its phases:
// set-up, the parties, the space for the models, the steps, finishing.
func trainSplit(ctx context.Context, cfg config.Config, pv, av *view, base func() *rundir.BaselineSummary, opt Options) (*rundir.Summary, error) {
	s := &splitRun{runBase: runBase{cfg: &cfg, opt: opt}, pv: pv, av: av}
	defer s.close()
	if err := s.setUp(); err != nil {
		return nil, err
	}
	if base != nil {
		base = sync.OnceValue(base)
	}
	if err := startWide(s.cfg, s.top, base, s.rec.Warn); err != nil {
		return nil, err
	}
	if err := s.buildParties(); err != nil {
		return nil, err
	}
	if err := s.reserveModels(s.top, s.bottom); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	elapsed, runErr := s.train(ctx, cancel)
	if base != nil && (runErr == nil || atomicfile.IsDiskFull(runErr) && s.pas.Step() > 0) {
		s.rec.SetBaseline(base())
	}
	return s.finish(ctx, s.pas.Step(), s.pas.Stopped(), elapsed, runErr, s.recordBackdoor)
}

// finish ends a run whose training returned runErr after steps
// (stopped: by early stopping): a detector's alarm ends it cleanly, a
// full disk or a signal saves the models and a truncated summary
// (salvage), another error is returned; otherwise the selected models
// are saved and the summary written; beforeSave, when set, runs before
// the models are saved on a clean end or an alarm (the backdoor's
// figures).
func (b *runBase) finish(ctx context.Context, steps int64, stopped bool, elapsed time.Duration, runErr error, beforeSave func() error) (*rundir.Summary, error) {
	cfg, rec, sel := b.cfg, b.rec, b.sel
	if alarm := (*integrity.Alarm)(nil); errors.As(runErr, &alarm) {
		// A detector's alarm ends the run cleanly: the models of before
		// the alarmed batch (or the selected ones) are kept.
		reason := alarmReason(alarm, steps)
		logf(b.opt.logger(), "%s", reason)
		rec.Alarm(reason)
		if beforeSave != nil {
			if err := beforeSave(); err != nil {
				return nil, err
			}
		}
		if err := b.reserve.Release(); err != nil {
			return nil, err
		}
		if err := sel.save(cfg.Out, sel.bottom, sel.top); err != nil {
			return nil, err
		}
		return rec.Finish(steps, elapsed)
	}
	if runErr != nil {
		if atomicfile.IsDiskFull(runErr) && steps > 0 {
			return nil, salvage(*cfg, rec, b.reserve, sel, sel.bottom, sel.top, steps, elapsed, runErr,
				fmt.Sprintf("the disk filled up after %d steps: %v", steps, runErr))
		}
		if cause := context.Cause(ctx); rundir.SignalOf(cause) != "" {
			rec.SetSignal(rundir.SignalOf(cause))
			return nil, salvage(*cfg, rec, b.reserve, sel, sel.bottom, sel.top, steps, elapsed, cause,
				fmt.Sprintf("%v after %d steps", cause, steps))
		}
		return nil, runErr
	}
	if stopped {
		rec.SetEarlyStopped()
		logf(b.opt.logger(), "early stop: %d evaluations without a better validation AUC", cfg.EarlyStop)
	}
	if beforeSave != nil {
		if err := beforeSave(); err != nil {
			return nil, err
		}
	}
	if err := sel.save(cfg.Out, sel.bottom, sel.top); err != nil {
		return nil, err
	}
	return rec.Finish(steps, elapsed)
}

// reserveSlack is the room held for the summary and the files' metadata
// beyond the models' size.
const reserveSlack = 1 << 20

// counter counts the bytes written to it (a saved model's size).
type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

// salvage ends a run that the disk filling up (or a signal) stopped
// after steps: the reserved space is given back, the models (the selected
// ones, as at a normal end) are saved and summary.json says the run is
// truncated and why (reason). It returns why, with what could not be
// saved.
func salvage(cfg config.Config, rec *rundir.Recorder, reserve *atomicfile.Reservation, sel *selection, bottom model.Bottom, top model.Top,
	steps int64, elapsed time.Duration, why error, reason string) error {
	errs := []error{why, reserve.Release()}
	if err := sel.save(cfg.Out, bottom, top); err != nil {
		errs = append(errs, err)
	}
	rec.Truncate(reason)
	if _, err := rec.Finish(steps, elapsed); err != nil {
		errs = append(errs, fmt.Errorf("summary: %w", err))
	}
	if len(errs) == 2 && errs[1] == nil {
		return fmt.Errorf("%w; the models after %d steps and a summary marked truncated are saved in %s", why, steps, cfg.Out)
	}
	return errors.Join(errs...)
}

// selection keeps, with key select best, a copy of both models at the
// evaluation with the best validation AUC so far, and saves it at the
// end; otherwise the models at the end are saved.
type selection struct {
	keep        bool
	bottom      model.Bottom
	top         model.Top
	step        int64
	bBuf, tBuf  bytes.Buffer
	hasSnapshot bool
	// others are the bottoms of the passive parties after the first in
	// a run with several (nil: none), kept and saved with these.
	others *partySelection
}

// observe snapshots the models when e is the newly selected evaluation.
// It runs inside the evaluation round, while the passive party waits for
// its answer, so neither model changes meanwhile.
func (s *selection) observe(rec *rundir.Recorder, e rundir.EvalRecord) error {
	if !s.keep {
		return nil
	}
	if cur, ok := rec.Selected(); !ok || cur.Step != e.Step || (s.hasSnapshot && s.step == e.Step) {
		return nil
	}
	s.bBuf.Reset()
	s.tBuf.Reset()
	if err := s.bottom.Save(&s.bBuf); err != nil {
		return fmt.Errorf("keeping the selected bottom model: %w", err)
	}
	if err := s.top.Save(&s.tBuf); err != nil {
		return fmt.Errorf("keeping the selected top model: %w", err)
	}
	s.step, s.hasSnapshot = e.Step, true
	return s.others.snapshot()
}

// save writes the selected models (the last ones without a snapshot).
func (s *selection) save(dir string, bottom model.Bottom, top model.Top) error {
	if err := s.others.save(dir); err != nil {
		return err
	}
	if !s.hasSnapshot {
		return saveModels(dir, bottom, top)
	}
	return saveModels(dir,
		saverFunc(func(w io.Writer) error { _, err := w.Write(s.bBuf.Bytes()); return err }),
		saverFunc(func(w io.Writer) error { _, err := w.Write(s.tBuf.Bytes()); return err }))
}

// joiner joins the two parties' views of every step into one
// rundir.Observation. The active party's observation of a step always
// arrives before the passive party's (the passive cannot backprop before
// the answer arrives), so the passive's completes the step.
type joiner struct {
	rec    *rundir.Recorder
	bottom model.Bottom
	dump   *dump.Writer
	layers []string

	act   *active.Observation // this step's active view
	err   error
	guard *integrity.Guard // the integrity detectors

	// queue, when set, records the steps on its own goroutine;
	// needClean says the auditor asks for the clean gradients.
	queue     *auditQueue
	needClean bool
	// stale, under a pipelined schedule, keeps the active's views of the
	// batches in flight (nil: the exact protocol).
	stale *staleViews
}

func (j *joiner) active(ob *active.Observation) error {
	j.act = ob
	if j.stale != nil {
		j.act = j.stale.keep(ob)
	}
	scores, err := j.guard.BatchRows(ob.Step, ob.Rows, ob.Embedding)
	j.rec.ObserveIntegrity(scores)
	raiseAlarms(j.rec, j.guard)
	return err
}

func (j *joiner) passive(ob *passive.Observation) error {
	// Under a pipelined schedule the active is already training on later
	// batches: j.act is its goroutine's, read only in the exact protocol.
	var a *active.Observation
	if j.stale != nil {
		a = j.stale.get(ob.Step)
	} else {
		a = j.act
	}
	if a == nil || a.Step != ob.Step {
		return j.fail(fmt.Errorf("step %d: no active-party record", ob.Step))
	}
	ab := &audit.Batch{
		Step: ob.Step, Epoch: ob.Epoch, IDs: ob.IDs, Labels: a.Labels, Layers: j.layers,
		Grads: ob.Grads, Outputs: ob.Outputs,
		// The cosine oracle: the clean gradient backpropagated through the
		// passive's layers at the same parameters.
		Clean: func() ([]*tensor.Matrix, error) { return j.bottom.Backprop(a.Clean) },
	}
	if j.queue != nil {
		if err := j.queue.push(a, ab, j.needClean); err != nil {
			return j.fail(err)
		}
		return nil
	}
	if _, err := j.rec.Batch(rundir.Observation{Active: a, Audit: ab}); err != nil {
		return j.fail(err)
	}
	if j.dump != nil {
		if err := j.dump.Batch(ab); err != nil {
			return j.fail(err)
		}
	}
	return nil
}

func (j *joiner) fail(err error) error {
	if j.err == nil {
		j.err = err
	}
	return err
}

// modelAttacks returns what runs the configured model attacks (model
// completion) on the bottom at an evaluation (nil figures when none is
// configured) and what returns the tuned model attackers' choices at the
// last one (nil when they are off).
func modelAttacks(cfg config.Config, split *data.Split, bottom model.Bottom) (func() (map[string]float64, error), func() map[string]string, error) {
	none := func() map[string]string { return nil }
	if len(attack.ModelNames(cfg.AttackNames())) == 0 {
		return func() (map[string]float64, error) { return nil, nil }, none, nil
	}
	rows, err := completion.Pick(split.Train.Labels, cfg.Known(), completion.DefaultUnlabelled, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	at, err := completion.New(cfg.AttackNames(), rows, cfg.EvalBatch, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	if cfg.TunedKnown > 0 {
		if err := at.Tune(cfg.TunedBudgetOr()); err != nil {
			return nil, nil, err
		}
	}
	return func() (map[string]float64, error) {
		res, err := at.Run(bottom, split.Train.X, split.Test.X, split.Test.Labels)
		if err != nil {
			return nil, err
		}
		return completion.Flatten(res, nil), nil
	}, at.TunedChoices, nil
}

// saver is what saveModels writes: a model's Save.
type saver interface{ Save(w io.Writer) error }

// saverFunc is a saved model held in memory.
type saverFunc func(w io.Writer) error

func (f saverFunc) Save(w io.Writer) error { return f(w) }

// saveModels writes the final bottom and top models into dir, each
// streamed to a temporary file renamed into place.
func saveModels(dir string, bottom, top saver) error {
	for _, m := range []struct {
		file string
		save func(io.Writer) error
	}{{rundir.BottomModelFile, bottom.Save}, {rundir.TopModelFile, top.Save}} {
		if err := atomicfile.Write(filepath.Join(dir, m.file), rundir.FileMode, m.save); err != nil {
			return fmt.Errorf("saving %s: %w", m.file, err)
		}
	}
	return nil
}

// checkClasses refuses, before any training, a split whose AUCs would be
// undefined: a test (or training) split with a single class.
func checkClasses(split *data.Split) error {
	for _, part := range []struct {
		name string
		d    *data.Dataset
	}{{"training", split.Train}, {"test", split.Test}} {
		n := len(part.d.Labels)
		pos := int(posRate(part.d.Labels)*float64(n) + 0.5)
		if n == 0 || pos == 0 || pos == n {
			class := "negative"
			if pos == n && n > 0 {
				class = "positive"
			}
			return fmt.Errorf("the %s split's %d rows are all %s, so its AUC is undefined; it needs more rows or a larger test fraction", part.name, n, class)
		}
	}
	return nil
}

func posRate(labels []uint8) float64 {
	s := 0
	for _, y := range labels {
		s += int(y)
	}
	return float64(s) / float64(max(len(labels), 1))
}

// logger returns the run's logger, one that discards when none is set.
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// logf logs a progress line, format with a, at level info.
func logf(log *slog.Logger, format string, a ...any) {
	if log.Enabled(context.Background(), slog.LevelInfo) {
		log.Info(fmt.Sprintf(format, a...))
	}
}
