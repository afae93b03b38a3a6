package run

import (
	"context"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/schedule"
	"github.com/splitguard/splitguard/transport"
)

// runBase is what every in-process run builds around its parties, with
// one passive party (trainSplit) or several (trainParties): the
// schedule, the active party's defences, the auditor, the rows of an
// evaluation round, the recorder, the integrity guard, the model
// selection and the disk space held for the models.
type runBase struct {
	cfg   *config.Config
	opt   Options
	sched *schedule.Schedule
	def   *config.Defences
	aud   *audit.Auditor
	// eval is one evaluation round's rows at the active party: the
	// validation rows, then the test rows.
	eval *data.Dataset
	// val is the validation split (nil: none).
	val     *data.Dataset
	rec     *rundir.Recorder
	grd     *integrity.Guard
	sel     *selection
	reserve *atomicfile.Reservation
}

// open builds the schedule, defences, auditor, evaluation rows, recorder
// and guard of a run whose active party holds av. The caller closes the
// run (close), also after an error.
func (b *runBase) open(av *view) error {
	split := av.split()
	var err error
	if b.sched, err = schedule.New(len(split.Train.IDs), b.cfg.Batch, b.cfg.Seed); err != nil {
		return err
	}
	if b.def, err = b.cfg.BuildDefences(split.Train); err != nil {
		return err
	}
	if b.aud, err = b.cfg.NewAuditor(); err != nil {
		return err
	}
	if b.eval, err = av.evalRows(); err != nil {
		return err
	}
	if b.val = av.val; b.val != nil && len(b.val.IDs) == 0 {
		b.val = nil
	}
	if b.rec, err = openRecorder(*b.cfg, b.opt, split.Train); err != nil {
		return err
	}
	b.grd, err = b.cfg.NewGuard()
	return err
}

// close releases the disk space still held and closes the recorder.
func (b *runBase) close() {
	b.reserve.Release()
	if b.rec != nil {
		b.rec.Close()
	}
}

// evaluated ends an evaluation round once the recorder has its record e:
// the selection keeps the models when e is the newly selected
// evaluation, and the guard's evaluation detectors see the passive
// party's gain.
func (b *runBase) evaluated(e rundir.EvalRecord) error {
	if err := b.sel.observe(b.rec, e); err != nil {
		return err
	}
	return b.grd.Eval(e.Step, e.PassiveGain)
}

// reserveModels holds the room the saved models and the summary need,
// for a disk that fills up during the run: the bottoms and the top.
func (b *runBase) reserveModels(top model.Top, bottoms ...model.Bottom) error {
	var n counter
	for _, m := range bottoms {
		if err := m.Save(&n); err != nil {
			return err
		}
	}
	if err := top.Save(&n); err != nil {
		return err
	}
	var err error
	b.reserve, err = atomicfile.Reserve(b.cfg.Out, int64(n)+reserveSlack)
	return err
}

// serveActive runs the active party on conn on a goroutine of its own
// and sends its error on the channel returned; an error also stops the
// run (stop), so that the passive parties do not wait for it.
func serveActive(ctx context.Context, act *active.Active, conn transport.ActiveConn, stop func(error)) <-chan error {
	activeErr := make(chan error, 1)
	go func() {
		err := act.Serve(ctx, conn)
		if err != nil {
			stop(err)
		}
		activeErr <- err
	}()
	return activeErr
}
