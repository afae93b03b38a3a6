package run

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/party/passive"
	"github.com/splitguard/splitguard/tensor"
)

// recorder joins the two parties' views of every batch, audits it and
// writes the run directory. The active party's observation of a step
// always arrives before the passive party's (the passive cannot backprop
// before the answer arrives), so passiveBatch completes the step.
type recorder struct {
	cfg   Config
	split *data.Split
	aud   *audit.Auditor
	opt   Options

	batches, evals, epochs *jsonLines
	epoch                  int // epoch of the last batch seen
	labelByID              map[uint64]uint8
	layers                 []string

	act     *active.Observation // this step's active view
	actStep int64

	total     int64
	start     time.Time
	lastLoss  float64
	protectMS float64
	evalsSeen []EvalRecord
	best      EvalRecord
	err       error
	dump      *dumper
}

func newRecorder(cfg Config, split *data.Split, aud *audit.Auditor, opt Options) (*recorder, error) {
	r := &recorder{cfg: cfg, split: split, aud: aud, opt: opt, actStep: -1, start: time.Now(), best: EvalRecord{TestAUC: -1}}
	var err error
	if r.batches, err = createJSONLines(filepath.Join(cfg.Out, "batches.jsonl")); err != nil {
		return nil, err
	}
	if r.evals, err = createJSONLines(filepath.Join(cfg.Out, "eval.jsonl")); err != nil {
		r.batches.Close()
		return nil, err
	}
	if r.epochs, err = createJSONLines(filepath.Join(cfg.Out, "epochs.jsonl")); err != nil {
		r.close()
		return nil, err
	}
	if cfg.Dump != "" {
		if r.dump, err = newDumper(cfg.Dump, cfg.DumpBatches); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *recorder) close() {
	for _, w := range []*jsonLines{r.batches, r.evals, r.epochs} {
		if w != nil {
			w.Close()
		}
	}
	if r.dump != nil {
		r.dump.close()
	}
}

func (r *recorder) activeBatch(ob *active.Observation) error {
	r.act = ob
	r.actStep = ob.Step
	r.protectMS += float64(ob.ProtectTime.Microseconds()) / 1000
	return nil
}

func (r *recorder) passiveBatch(ob *passive.Observation, bottom model.Bottom) error {
	if r.actStep != ob.Step {
		return r.fail(fmt.Errorf("run: step %d: no active-party record (have step %d)", ob.Step, r.actStep))
	}
	a := r.act
	if ob.Epoch != r.epoch {
		if err := r.endEpoch(); err != nil {
			return r.fail(err)
		}
		r.epoch = ob.Epoch
	}
	if r.layers == nil {
		r.layers = audit.LayerNames(len(ob.Grads))
	}
	leak, err := r.aud.Observe(&audit.Batch{
		Step: ob.Step, Epoch: ob.Epoch, IDs: ob.IDs, Labels: a.Labels, Layers: r.layers,
		Grads: ob.Grads, Outputs: ob.Outputs,
		Clean: func() ([]*tensor.Matrix, error) { return bottom.Backprop(a.Clean) },
	})
	if err != nil {
		return r.fail(err)
	}
	pos := 0
	for _, y := range a.Labels {
		pos += int(y)
	}
	rec := BatchRecord{Step: ob.Step, Epoch: ob.Epoch, Loss: a.Loss, Positives: pos, Size: len(a.Labels),
		Leak: leak, ProtectMS: float64(a.ProtectTime.Microseconds()) / 1000}
	if r.cfg.DCorAlpha > 0 {
		v := a.DCorLoss
		rec.DCorLoss = &v
	}
	if len(a.Stats) > 0 {
		rec.Protection = a.Stats
	}
	if err := r.batches.Write(rec); err != nil {
		return r.fail(err)
	}
	if r.opt.OnBatch != nil {
		r.opt.OnBatch(rec)
	}
	if r.dump != nil {
		if err := r.dump.batch(ob, a); err != nil {
			return r.fail(err)
		}
	}
	r.lastLoss = a.Loss
	r.report(ob.Step+1, leak)
	return nil
}

func (r *recorder) report(done int64, leak map[string]*float64) {
	elapsed := time.Since(r.start).Seconds()
	p := Progress{Step: done, Total: r.total, Loss: r.lastLoss}
	if elapsed > 0 {
		p.ExamplesPerS = float64(done) * float64(r.cfg.Batch) / elapsed
	}
	keys := make([]string, 0, len(leak))
	for k := range leak {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "norm/cut" || p.LeakKey == "" {
			p.LeakKey, p.Leak = k, leak[k]
		}
	}
	if r.opt.Progress != nil {
		r.opt.Progress(p)
	}
}

func (r *recorder) eval(res *active.EvalResult) error {
	e := EvalRecord{Step: res.Step, TestAUC: res.AUC, TestLoss: res.Loss, ACE: res.ACE}
	if err := r.evals.Write(e); err != nil {
		return r.fail(err)
	}
	if r.opt.OnEval != nil {
		r.opt.OnEval(e)
	}
	r.evalsSeen = append(r.evalsSeen, e)
	if e.TestAUC > r.best.TestAUC {
		r.best = e
	}
	logf(r.opt.Log, "eval: step %d  test AUC %.4f  test loss %.4f  ACE %.4f", e.Step, e.TestAUC, e.TestLoss, e.ACE)
	return nil
}

// EpochRecord is one line of epochs.jsonl: the epoch-memory attacks'
// leak AUCs over every example seen up to the end of the epoch.
type EpochRecord struct {
	Epoch int                 `json:"epoch"`
	Leak  map[string]*float64 `json:"leak"`
}

// endEpoch runs the end-of-epoch audit (the epoch-memory attacks).
func (r *recorder) endEpoch() error {
	if r.labelByID == nil {
		r.labelByID = make(map[uint64]uint8, len(r.split.Train.IDs))
		for i, id := range r.split.Train.IDs {
			r.labelByID[id] = r.split.Train.Labels[i]
		}
	}
	leak, err := r.aud.EndEpoch(func(id uint64) (uint8, bool) { y, ok := r.labelByID[id]; return y, ok })
	if err != nil || leak == nil {
		return err
	}
	return r.epochs.Write(EpochRecord{Epoch: r.epoch, Leak: leak})
}

func (r *recorder) fail(err error) error {
	if r.err == nil {
		r.err = err
	}
	return err
}

func (r *recorder) finish(elapsed time.Duration, steps int64) (*Summary, error) {
	if len(r.evalsSeen) == 0 {
		return nil, fmt.Errorf("run: no evaluation was recorded")
	}
	if err := r.endEpoch(); err != nil {
		return nil, err
	}
	last := r.evalsSeen[len(r.evalsSeen)-1]
	examples := int64(0)
	if steps > 0 {
		examples = min(steps*int64(r.cfg.Batch), int64(r.cfg.Epochs)*int64(len(r.split.Train.IDs)))
	}
	s := &Summary{
		TestAUCBest: r.best.TestAUC, TestAUCFinal: last.TestAUC, BestStep: r.best.Step,
		TestLossFinal: last.TestLoss, TestLossNote: "mean binary cross-entropy on the test split, without regularisers",
		ACEFinal: last.ACE, ACEBest: r.best.ACE, ACEBins: r.cfg.ACEBins, TrainLossFinal: r.lastLoss,
		Steps: steps, Epochs: r.cfg.Epochs, Examples: examples, Seconds: elapsed.Seconds(),
		Leak: r.aud.Summary(), TrainRows: len(r.split.Train.IDs), TestRows: len(r.split.Test.IDs),
		TrainPosRate: posRate(r.split.Train.Labels), BadRowsSkipped: r.split.Info.BadRows,
		Engine: engineName(), Protect: r.cfg.Protect, Truncated: r.cfg.MaxSteps > 0 && steps < int64(r.cfg.Epochs)*int64((len(r.split.Train.IDs)+r.cfg.Batch-1)/r.cfg.Batch),
	}
	if elapsed > 0 {
		s.ExamplesPerS = float64(examples) / elapsed.Seconds()
	}
	if steps > 0 {
		s.ProtectMSMean = r.protectMS / float64(steps)
		s.StepMSMean = 1000 * elapsed.Seconds() / float64(steps)
	}
	if err := writeJSONAtomic(filepath.Join(r.cfg.Out, "summary.json"), s); err != nil {
		return nil, err
	}
	return s, nil
}
