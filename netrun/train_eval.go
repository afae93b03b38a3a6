package netrun

import (
	"io"
	"log/slog"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport"
)

// evalJudge is the part of the active party's state that records the
// evaluations and decides on them, the same with one passive party
// (activeRun) and with several (partiesRun), which embed it.
type evalJudge struct {
	rec   *rundir.Recorder
	met   *activeMetrics
	guard *integrity.Guard // the integrity detectors, fresh at every build
	// kept is the top of the selected evaluation (select: best); keep and
	// stop are the verdict on the evaluation round just scored, sent with
	// the answer to its last message.
	kept       keptModel
	keep, stop bool
	// stopSent says a stop was sent to the passive parties.
	stopSent bool
}

// answer puts the verdict on the evaluation round just scored into the
// answer to its last message.
func (j *evalJudge) answer(b *transport.Backward) {
	b.Keep, b.Stop = j.keep, j.stop
	j.stopSent = j.stopSent || j.stop
}

// judge records an evaluation (the run directory, the live metrics, the
// integrity detectors, the log) and makes the verdict the round's last
// answer carries, as the in-process run decides it (run's selection and
// its Stop): keep the models of the evaluation the recorder selects now
// (with selection best; save writes the top), stop once it has stalled.
func (j *evalJudge) judge(res *active.EvalResult, selection string, save func(io.Writer) error, log *slog.Logger) error {
	e, err := j.rec.Eval(res)
	if err != nil {
		return err
	}
	j.met.eval(e)
	if err := j.guard.Eval(e.Step, e.PassiveGain); err != nil {
		return err
	}
	cur, ok := j.rec.Selected()
	j.keep = selection == config.SelectBest && ok && cur.Step == e.Step
	j.stop = j.rec.Stalled()
	if j.keep {
		if err := j.kept.keep(e.Step, save); err != nil {
			return err
		}
	}
	log.Info("evaluation", evalLogArgs(&e)...)
	return nil
}

// evalLogArgs are the attributes of an evaluation's log line.
func evalLogArgs(e *rundir.EvalRecord) []any {
	args := []any{"step", e.Step, "test_auc", e.TestAUC, "test_loss", e.TestLoss, "ace", e.ACE}
	if e.ValAUC != nil {
		args = append(args, "val_auc", *e.ValAUC)
	}
	if e.PassiveGain != nil {
		args = append(args, "passive_gain", *e.PassiveGain)
	}
	for k, v := range e.Integrity {
		args = append(args, k, v)
	}
	return args
}
