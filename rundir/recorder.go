package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// Observation is one training step as the run directory records it, the
// same in every mode: what the active party knows of the step, and what
// the passive party holds at each of its layers (in a networked run, the
// cut layer only: that is what the active party sent).
type Observation struct {
	Active *active.Observation
	Audit  *audit.Batch
	// Parties are the step as each audited party or colluding subset of a
	// run with several passive parties saw it (Recorder.SetParties).
	Parties []*audit.Batch
}

// Hooks are told about the run as it is recorded (each may be nil). The
// record's maps are the recorder's and are reused: copy what you keep.
type Hooks struct {
	OnBatch  func(BatchRecord)
	OnEval   func(EvalRecord)
	Progress func(Progress)
	// Logger receives one line per evaluation (nil: none).
	Logger *slog.Logger
}

// Progress is a snapshot handed to Hooks.Progress after every batch.
type Progress struct {
	Step, Total  int64
	Loss         float64
	ExamplesPerS float64
	// LeakKey and Leak are one leak AUC of the last batch (the cut layer's
	// of the best-ranked attack, attack.Rank, when audited: norm/cut; else
	// the first key in sorted order); Leak is nil when the AUC is undefined.
	LeakKey string
	Leak    *float64
}

// Recorder writes the records of one run into its directory.
type Recorder struct {
	cfg   config.Config
	split *data.Split // the training split's IDs and labels are the epoch attacks' truth
	aud   *audit.Auditor
	hooks Hooks

	batches, evals, epochs *jsonLines
	epoch                  int
	labelByID              map[uint64]uint8

	total     int64
	start     time.Time
	lastLoss  float64
	protectMS float64
	evalsSeen []EvalRecord
	best      EvalRecord
	truncated string // why the run ended early ("" unless Truncate was called)
	signal    string // the signal that ended it, if one did

	// Validation: the evaluation with the best validation AUC so far
	// (better by more than the margin of key select_margin, selectMargin),
	// and how many evaluations came after it.
	bestVal      EvalRecord
	hasBestVal   bool
	sinceBest    int
	losses       []float64 // every step's training loss
	baseline     *BaselineSummary
	earlyStopped bool
	// tunedModel holds the tuned model attackers' last choices (SetTunedModel).
	tunedModel map[string]string
	valRows    int
	valPos     int // positives among the validation rows
	fallbacks  []CheckpointFallback
	warnings   []config.Warning // Warn's, before the summary's own
	// selScores and selLabels are the test scores and labels of the
	// selected evaluation (selStep), for its bootstrap interval; empty
	// when that evaluation ran in an earlier process of a resumed run.
	selScores []float64
	selLabels []uint8
	selStep   int64
	// integrity: the detectors' largest scores since the last evaluation
	// and over the run, and the alarm that ended the run (integrity.go).
	integSince, integMax map[string]float64
	alarm                string
	integAlarms          []IntegrityAlarmRecord // integrity_alarm.go
	backdoor             *BackdoorSummary
	// parties are the per-party audits of a run with several passive
	// parties (parties.go).
	parties []PartyAudit
	// partyAttacks are the next evaluation's model-attack figures per
	// party (SetPartyAttacks).
	partyAttacks map[string]map[string]float64
}

// AddFallback records a resume from an older checkpoint in the summary.
func (r *Recorder) AddFallback(f CheckpointFallback) { r.fallbacks = append(r.fallbacks, f) }

// Warn adds a warning to the summary (and nothing else: the caller logs
// it); keys are the configuration keys its text names ("key batch").
func (r *Recorder) Warn(msg string, keys ...string) {
	r.warnings = append(r.warnings, config.Warning{Text: msg, Keys: keys})
}

// Truncate marks the run as ended before its planned steps for reason;
// the summary Finish writes says so.
func (r *Recorder) Truncate(reason string) { r.truncated = reason }

// SetSignal records the signal that ended the run (Summary.Signal).
func (r *Recorder) SetSignal(name string) { r.signal = name }

// Open starts recording the run cfg describes into cfg.Out. With resume,
// what a previous process of the run wrote is kept until
// [Recorder.Rewind] says which step the run resumes from; otherwise the
// files start empty. Call [Recorder.Start] before the first step.
func Open(cfg config.Config, resume bool, hooks Hooks) (*Recorder, error) {
	r := &Recorder{cfg: cfg, hooks: hooks, start: time.Now(), best: EvalRecord{TestAUC: -1}}
	if resume {
		return r, r.Rewind(1<<63 - 1)
	}
	return r, r.open(nil, nil, nil)
}

// Start sets what the run trains on (the training split's IDs and labels
// are the epoch attacks' truth), the auditor that scores every step (a
// resumed run restores one from its checkpoint) and the planned number of
// steps, for progress.
func (r *Recorder) Start(split *data.Split, aud *audit.Auditor, total int64) {
	r.split, r.aud, r.total = split, aud, total
}

// Rewind keeps the batch records of steps < step, the evaluations of
// steps ≤ step and the epoch records of the epochs finished before step,
// and carries on recording from there.
func (r *Recorder) Rewind(step int64) error {
	r.lastLoss, r.protectMS, r.evalsSeen, r.best = 0, 0, nil, EvalRecord{TestAUC: -1}
	r.bestVal, r.hasBestVal, r.sinceBest, r.losses, r.earlyStopped = EvalRecord{}, false, 0, nil, false
	epochsBefore := 0
	keepBatch := func(line []byte) (bool, error) {
		var b BatchRecord
		if err := json.Unmarshal(line, &b); err != nil {
			return false, err
		}
		if b.Step >= step {
			return false, nil
		}
		r.lastLoss = b.Loss
		r.losses = append(r.losses, b.Loss)
		r.protectMS += b.ProtectMS
		epochsBefore = b.Epoch
		return true, nil
	}
	keepEval := func(line []byte) (bool, error) {
		var e EvalRecord
		if err := json.Unmarshal(line, &e); err != nil {
			return false, err
		}
		if e.Step > step {
			return false, nil
		}
		r.addEval(e)
		return true, nil
	}
	keepEpoch := func(line []byte) (bool, error) {
		var e EpochRecord
		if err := json.Unmarshal(line, &e); err != nil {
			return false, err
		}
		return e.Epoch < epochsBefore, nil
	}
	r.epoch = epochsBefore
	return r.open(keepBatch, keepEval, keepEpoch)
}

func (r *Recorder) open(keepBatch, keepEval, keepEpoch func([]byte) (bool, error)) error {
	r.Close()
	var err error
	if r.batches, err = openLines(filepath.Join(r.cfg.Out, BatchesFile), keepBatch); err != nil {
		return err
	}
	if r.evals, err = openLines(filepath.Join(r.cfg.Out, EvalFile), keepEval); err != nil {
		return err
	}
	r.epochs, err = openLines(filepath.Join(r.cfg.Out, EpochsFile), keepEpoch)
	return err
}

// Close closes the record files.
func (r *Recorder) Close() {
	for _, w := range []*jsonLines{r.batches, r.evals, r.epochs} {
		w.Close()
	}
	r.batches, r.evals, r.epochs = nil, nil, nil
}

// Batch audits one training step, appends its record to batches.jsonl
// and returns it. A step of a new epoch first closes the previous epoch
// (the epoch attacks' records).
func (r *Recorder) Batch(ob Observation) (BatchRecord, error) {
	a := ob.Active
	if a.Epoch != r.epoch {
		if err := r.endEpoch(); err != nil {
			return BatchRecord{}, err
		}
		r.epoch = a.Epoch
	}
	leak, err := r.aud.Observe(ob.Audit)
	if err != nil {
		return BatchRecord{}, fmt.Errorf("audit: %w", err)
	}
	pos := 0
	for _, y := range a.Labels {
		pos += int(y)
	}
	rec := BatchRecord{Step: a.Step, Epoch: a.Epoch, Loss: a.Loss, Positives: pos, Size: len(a.Labels),
		Leak: leak, ProtectMS: float64(a.ProtectTime.Microseconds()) / 1000}
	if a.HasLossTerms {
		v := a.LossTerms
		rec.DCorLoss = &v
	}
	if len(a.Stats) > 0 {
		rec.Protection = maps.Clone(a.Stats)
	}
	if rec.Parties, err = r.observeParties(ob.Parties); err != nil {
		return BatchRecord{}, err
	}
	if err := r.batches.Write(rec); err != nil {
		return BatchRecord{}, err
	}
	r.lastLoss = a.Loss
	r.losses = append(r.losses, a.Loss)
	r.protectMS += rec.ProtectMS
	if r.hooks.OnBatch != nil {
		r.hooks.OnBatch(rec)
	}
	r.progress(a.Step+1, leak)
	return rec, nil
}

func (r *Recorder) progress(done int64, leak map[string]*float64) {
	if r.hooks.Progress == nil {
		return
	}
	elapsed := time.Since(r.start).Seconds()
	p := Progress{Step: done, Total: r.total, Loss: r.lastLoss}
	if elapsed > 0 {
		p.ExamplesPerS = float64(done) * float64(r.cfg.Batch) / elapsed
	}
	if k := headlineKey(slices.Collect(maps.Keys(leak)), attack.Rank); k != "" {
		p.LeakKey, p.Leak = k, leak[k]
	}
	r.hooks.Progress(p)
}

// Eval appends one evaluation to eval.jsonl and returns its record.
func (r *Recorder) Eval(res *active.EvalResult) (EvalRecord, error) { return r.EvalWith(res, nil) }

// EvalWith is Eval with the model attacks' figures at this evaluation
// (EvalRecord.Attacks; nil: none).
func (r *Recorder) EvalWith(res *active.EvalResult, attacks map[string]float64) (EvalRecord, error) {
	return r.EvalWithFeatures(res, attacks, nil)
}

// EvalWithFeatures is EvalWith with the feature attacks' figures at this
// evaluation (EvalRecord.Features; nil: none).
func (r *Recorder) EvalWithFeatures(res *active.EvalResult, attacks, features map[string]float64) (EvalRecord, error) {
	e := EvalRecord{Step: res.Step, TestAUC: res.AUC, TestLoss: res.Loss, ACE: res.ACE, Attacks: attacks, Features: features}
	if res.ValRows > 0 {
		loss := res.ValLoss
		e.ValLoss = &loss
		if !math.IsNaN(res.ValAUC) {
			auc := res.ValAUC
			e.ValAUC = &auc
		}
	}
	r.evalIntegrity(&e, res)
	r.evalParties(&e, res)
	if err := r.evals.Write(e); err != nil {
		return e, err
	}
	r.addEval(e)
	if sel, ok := r.Selected(); ok && sel.Step == e.Step && len(res.TestScores) > 0 {
		r.selScores = append(r.selScores[:0], res.TestScores...)
		r.selLabels = append(r.selLabels[:0], res.TestLabels...)
		r.selStep = e.Step
	}
	if r.hooks.OnEval != nil {
		r.hooks.OnEval(e)
	}
	if r.hooks.Logger != nil {
		val := ""
		if e.ValAUC != nil {
			val = fmt.Sprintf("val AUC %.4f  ", *e.ValAUC)
		}
		r.hooks.Logger.Info(fmt.Sprintf("eval: step %d  %stest AUC %.4f  test loss %.4f  ACE %.4f%s%s", e.Step, val, e.TestAUC, e.TestLoss, e.ACE, integrityLog(e), partyLog(e)))
	}
	return e, nil
}

func (r *Recorder) addEval(e EvalRecord) {
	r.evalsSeen = append(r.evalsSeen, e)
	if e.TestAUC > r.best.TestAUC {
		r.best = e
	}
	switch {
	case e.ValAUC != nil && (!r.hasBestVal || *e.ValAUC > *r.bestVal.ValAUC+r.selectMargin()):
		r.bestVal, r.hasBestVal, r.sinceBest = e, true, 0
	case r.hasBestVal:
		r.sinceBest++
	}
}

// Selected returns the evaluation of the model the run keeps (key
// select): the one with the best validation AUC (the earliest of ties;
// with key select_margin, a later one replaces it only when better by
// more than the margin), or the last; false before the first evaluation. Without a defined
// validation AUC, best falls back to the last.
func (r *Recorder) Selected() (EvalRecord, bool) {
	if len(r.evalsSeen) == 0 {
		return EvalRecord{}, false
	}
	if r.cfg.Select == config.SelectBest && r.hasBestVal {
		return r.bestVal, true
	}
	return r.evalsSeen[len(r.evalsSeen)-1], true
}

// Stalled reports whether the run should stop early: the last EarlyStop
// evaluations (key early_stop) brought no better validation AUC.
func (r *Recorder) Stalled() bool {
	return r.cfg.EarlyStop > 0 && r.hasBestVal && r.sinceBest >= r.cfg.EarlyStop
}

// SetConfig replaces the run's configuration once the settings left to
// the data are resolved (a networked run opens its recorder before it
// knows its training rows).
func (r *Recorder) SetConfig(cfg config.Config) { r.cfg = cfg }

// SetValRows records the size of the validation split for the summary.
func (r *Recorder) SetValRows(n int) { r.valRows = n }

// SetValLabels records how many of the validation rows, whose labels
// these are, are positive: the selection's margin (key select_margin)
// needs it.
func (r *Recorder) SetValLabels(labels []uint8) {
	r.valPos = 0
	for _, y := range labels {
		r.valPos += int(y)
	}
}

// selectMargin is by how much a validation AUC must beat the kept
// evaluation's to replace it (key select_margin): the kept AUC's standard
// error (metrics.AUCStdErr) with SelectMarginSE, else 0.
func (r *Recorder) selectMargin() float64 {
	if r.cfg.SelectMargin != config.SelectMarginSE || !r.hasBestVal {
		return 0
	}
	se := metrics.AUCStdErr(*r.bestVal.ValAUC, r.valPos, r.valRows-r.valPos)
	if math.IsNaN(se) {
		return 0
	}
	return se
}

// SetEarlyStopped records that training ended early (Stalled).
func (r *Recorder) SetEarlyStopped() { r.earlyStopped = true }

// SetTunedModel records the tuned model attackers' choices at the last
// evaluation (completion.Attacker.TunedChoices, keyed "ATTACK_tuned"),
// for the summary's tuned record.
func (r *Recorder) SetTunedModel(choices map[string]string) { r.tunedModel = choices }

// SetBaseline records the run's logistic baseline for the summary.
func (r *Recorder) SetBaseline(b *BaselineSummary) { r.baseline = b }

// endEpoch runs the end-of-epoch audit (the epoch attacks).
func (r *Recorder) endEpoch() error {
	if r.aud == nil || !r.aud.HasEpochMemory() {
		return nil
	}
	if r.labelByID == nil {
		train := r.split.Train
		r.labelByID = make(map[uint64]uint8, len(train.IDs))
		for i, id := range train.IDs {
			r.labelByID[id] = train.Labels[i]
		}
	}
	leak, err := r.aud.EndEpoch(func(id uint64) (uint8, bool) { y, ok := r.labelByID[id]; return y, ok })
	if err != nil || leak == nil {
		return err
	}
	return r.epochs.Write(EpochRecord{Epoch: r.epoch, Leak: leak})
}

// Finish closes the last epoch and writes summary.json for a run that
// made steps training steps in elapsed. A run without an evaluation has
// no summary, unless it was truncated after [Recorder.Start]: its summary
// then says that its evaluation figures are not results.
func (r *Recorder) Finish(steps int64, elapsed time.Duration) (*Summary, error) {
	noEval := len(r.evalsSeen) == 0
	if noEval && (r.truncated == "" || r.split == nil || r.aud == nil) {
		return nil, errors.New("no evaluation was recorded")
	}
	if err := r.endEpoch(); err != nil {
		return nil, err
	}
	cfg, train := &r.cfg, r.split.Train
	var last EvalRecord
	best := r.best
	if noEval {
		best = EvalRecord{}
	} else {
		last = r.evalsSeen[len(r.evalsSeen)-1]
	}
	examples := int64(0)
	if steps > 0 {
		examples = min(steps*int64(cfg.Batch), int64(cfg.Epochs)*int64(len(train.IDs)))
	}
	pos := 0
	for _, y := range train.Labels {
		pos += int(y)
	}
	planned := int64(cfg.Epochs) * int64((len(train.IDs)+cfg.Batch-1)/cfg.Batch)
	s := &Summary{
		TestAUCBest: best.TestAUC, TestAUCFinal: last.TestAUC, BestStep: best.Step,
		TestLossFinal: last.TestLoss, TestLossNote: "mean binary cross-entropy on the test split, without regularisers",
		ACEFinal: last.ACE, ACEBest: best.ACE, ACEBins: cfg.ACEBins, TrainLossFinal: r.lastLoss,
		Steps: steps, Epochs: cfg.Epochs, Examples: examples, Seconds: elapsed.Seconds(),
		Leak: r.aud.Summary(), Tuned: r.tunedChoices(), TrainRows: len(train.IDs), TestRows: len(r.split.Test.IDs),
		TrainPosRate: float64(pos) / float64(max(len(train.IDs), 1)), BadRowsSkipped: r.split.Info.BadRows,
		Engine: tensor.Default.Name(), Protect: cfg.Protect,
		Truncated:           cfg.MaxSteps > 0 && steps < planned && !r.earlyStopped,
		CheckpointFallbacks: slices.Clone(r.fallbacks),
	}
	for _, e := range r.evalsSeen {
		for k, v := range e.Attacks {
			if s.EvalAttacksBest == nil {
				s.EvalAttacksBest = map[string]float64{}
			}
			if b, ok := s.EvalAttacksBest[k]; !ok || v > b {
				s.EvalAttacksBest[k] = v
			}
		}
	}
	if len(last.Attacks) > 0 {
		s.EvalAttacksFinal = maps.Clone(last.Attacks)
	}
	s.FeatureLeakFinal, s.FeatureLeakBest = featureLeak(r.evalsSeen, last)
	if sel, ok := r.Selected(); ok && len(sel.Features) > 0 {
		s.FeatureLeakSelected = maps.Clone(sel.Features)
	}
	// Batches partition the training split in every epoch, so an example
	// has been released at most once per epoch the run has begun.
	perEpoch := int64((len(train.IDs) + cfg.Batch - 1) / cfg.Batch)
	if perEpoch > 0 {
		priv, err := protect.Account(cfg.Protect, cfg.Params, (steps+perEpoch-1)/perEpoch)
		if err != nil {
			return nil, err
		}
		s.Privacy = priv
	}
	r.summaryIntegrity(s, last)
	r.summaryParties(s, last)
	switch {
	case r.truncated != "":
		s.Truncated, s.TruncatedReason, s.Signal = true, r.truncated, r.signal
	case s.Truncated:
		s.TruncatedReason = fmt.Sprintf("max_steps %d of %d planned steps", cfg.MaxSteps, planned)
	}
	if elapsed > 0 {
		s.ExamplesPerS = float64(examples) / elapsed.Seconds()
	}
	if steps > 0 {
		s.ProtectMSMean = r.protectMS / float64(steps)
		s.StepMSMean = 1000 * elapsed.Seconds() / float64(steps)
	}
	r.selection(s)
	if noEval {
		s.Warnings = append(s.Warnings, "no evaluation was recorded before the run ended: its AUC, loss and ACE figures are not results")
	}
	if err := WriteJSON(filepath.Join(cfg.Out, SummaryFile), s); err != nil {
		return nil, err
	}
	return s, nil
}

// bootstrapReplicates is the number of bootstrap samples behind
// summary.json's test_auc_selected_ci95.
const bootstrapReplicates = 1000

// The warning thresholds: a split model whose AUC is this much below the
// baseline's, and a loss that did not fall.
const baselineTolerance = 0.01

// TestAUCBestNote is summary.json's test_auc_best_note.
const TestAUCBestNote = "the top of the per-step test curve, chosen by looking at the test split: for comparison with the papers' curves, not a result; the result is test_auc_selected"

// bootstrapIntervals fills the summary's bootstrap intervals of the
// selected model's test AUC and, with a baseline scored on the same test
// rows, of its difference from the baseline's; both come from one set of
// replicates (metrics.AUCAndDiffBootstrap) when both can be had.
func (r *Recorder) bootstrapIntervals(s *Summary) {
	seed := uint64(r.cfg.Seed)
	b := r.baseline
	paired := b != nil && len(b.testScores) == len(r.selScores) && slices.Equal(r.selLabels, r.split.Test.Labels)
	if paired {
		if iv, diff, err := metrics.AUCAndDiffBootstrap(r.selScores, b.testScores, r.selLabels, bootstrapReplicates, 0.95, seed); err == nil {
			s.TestAUCSelectedCI95 = &[2]float64{iv.Lo, iv.Hi}
			s.TestAUCMinusBaselineCI95 = &[2]float64{diff.Lo, diff.Hi}
			return
		}
	}
	// No baseline, or one of the two intervals cannot be had: each apart.
	if iv, err := metrics.AUCBootstrap(r.selScores, r.selLabels, bootstrapReplicates, 0.95, seed); err == nil {
		s.TestAUCSelectedCI95 = &[2]float64{iv.Lo, iv.Hi}
	}
	if paired {
		if iv, err := metrics.AUCDiffBootstrap(r.selScores, b.testScores, r.selLabels, bootstrapReplicates, 0.95, seed); err == nil {
			s.TestAUCMinusBaselineCI95 = &[2]float64{iv.Lo, iv.Hi}
		}
	}
}

// selection fills the summary's validation, selection, baseline and
// warning fields.
func (r *Recorder) selection(s *Summary) {
	cfg := &r.cfg
	s.TestAUCBestNote = TestAUCBestNote
	for _, w := range r.warnings {
		s.warn(w)
	}
	s.Select, s.ValFrac, s.Auto, s.EarlyStopped = cfg.Select, cfg.ValFrac, cfg.Auto, r.earlyStopped
	if s.Select == "" {
		s.Select = config.SelectLast
	}
	s.ValRows, s.ValPositives = r.valRows, r.valPos
	sel, _ := r.Selected()
	s.SelectedStep, s.TestAUCSelected, s.TestLossSelected, s.ACESelected = sel.Step, sel.TestAUC, sel.TestLoss, sel.ACE
	s.ValAUCSelected = sel.ValAUC
	if len(r.selScores) > 0 && r.selStep == sel.Step {
		r.bootstrapIntervals(s)
	}
	if r.hasBestVal {
		v := *r.bestVal.ValAUC
		s.ValAUCBest = &v
	}
	if s.Select == config.SelectBest && !r.hasBestVal {
		s.Select = config.SelectLast
		s.Warnings = append(s.Warnings, "no evaluation had a defined validation AUC (a validation split of one class?): the last model is kept")
	}
	if n := len(r.losses); n > 0 {
		w := max(1, min(50, n/10))
		s.TrainLossFirst, s.TrainLossLast = mean(r.losses[:w]), mean(r.losses[n-w:])
		// A model started at the baseline (key wide_start) starts
		// trained: its loss need not fall.
		if n >= 10 && !(s.TrainLossLast < s.TrainLossFirst) && r.cfg.WideStart != config.WideStartBaseline {
			s.warn(config.Warning{Text: fmt.Sprintf("the training loss did not fall (mean %.4f over the first %d steps, %.4f over the last %d): the model may not be learning — try another learning rate (key lr)", s.TrainLossFirst, w, s.TrainLossLast, w), Keys: []string{"lr"}})
		}
	}
	s.Baseline = r.baseline
	if b := r.baseline; b != nil {
		warned := len(s.Warnings)
		switch {
		case b.ValAUC != nil && s.ValAUCBest != nil:
			if *s.ValAUCBest < *b.ValAUC-baselineTolerance {
				s.Warnings = append(s.Warnings, fmt.Sprintf("the split model's best validation AUC %.4f stays below the logistic baseline's %.4f (%s columns): it has not learnt what a linear model finds", *s.ValAUCBest, *b.ValAUC, b.Columns))
			}
		case b.TestAUC != nil:
			if s.TestAUCSelected < *b.TestAUC-baselineTolerance {
				s.Warnings = append(s.Warnings, fmt.Sprintf("the split model's test AUC %.4f is below the logistic baseline's %.4f (%s columns): it has not learnt what a linear model finds", s.TestAUCSelected, *b.TestAUC, b.Columns))
			}
		}
		if len(s.Warnings) == warned {
			s.heldOutBelowBaseline(b)
		}
	}
}

// heldOutBelowBaseline warns when the kept model is shown below the
// baseline on the test rows although the validation split did not show
// it: the paired 95% interval of the test AUC's difference lies wholly
// below −baselineTolerance. The validation split then chose a model
// that does not hold up (an evaluation whose validation AUC rose by
// chance, likelier the fewer validation rows there are). The warning
// reads the test split and changes nothing: the model was chosen before.
func (s *Summary) heldOutBelowBaseline(b *BaselineSummary) {
	d := s.TestAUCMinusBaselineCI95
	if d == nil || b.TestAUC == nil || !(d[1] < -baselineTolerance) {
		return
	}
	s.warn(config.Warning{Text: fmt.Sprintf("the kept model's test AUC %.4f is below the logistic baseline's %.4f (%s columns) on the same test rows (paired 95%% interval of the difference %+.4f … %+.4f), though its validation AUC was not: the model chosen on %d validation rows does not hold up — a larger validation share (key val_frac) makes the choice less noisy", s.TestAUCSelected, *b.TestAUC, b.Columns, d[0], d[1], s.ValRows), Keys: []string{"val_frac"}})
}

// warn adds w to the summary's warnings (its keys to WarningKeys).
func (s *Summary) warn(w config.Warning) {
	s.Warnings = append(s.Warnings, w.Text)
	if len(w.Keys) > 0 {
		if s.WarningKeys == nil {
			s.WarningKeys = map[string][]string{}
		}
		s.WarningKeys[w.Text] = w.Keys
	}
}

// KeyedWarnings returns the summary's warnings, each with the
// configuration keys its text names (known for a summary this process
// made, not one read from summary.json).
func (s *Summary) KeyedWarnings() []config.Warning {
	out := make([]config.Warning, len(s.Warnings))
	for i, w := range s.Warnings {
		out[i] = config.Warning{Text: w, Keys: s.WarningKeys[w]}
	}
	return out
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// tunedChoices merges the auditor's tuned attackers' choices and the tuned
// model attackers' (nil when there is neither).
func (r *Recorder) tunedChoices() map[string]string {
	out := r.aud.TunedChoices()
	if len(r.tunedModel) > 0 && out == nil {
		out = map[string]string{}
	}
	for k, v := range r.tunedModel {
		out[k] = v
	}
	return out
}

// featureLeak returns the feature attacks' figures at the last
// evaluation and the largest of each over evals (nil without any).
func featureLeak(evals []EvalRecord, last EvalRecord) (final, best map[string]float64) {
	for _, e := range evals {
		for k, v := range e.Features {
			if best == nil {
				best = map[string]float64{}
			}
			if b, ok := best[k]; !ok || v > b {
				best[k] = v
			}
		}
	}
	if len(last.Features) > 0 {
		final = maps.Clone(last.Features)
	}
	return final, best
}
