package rundir

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/splitguard/splitguard/baseline"
	"github.com/splitguard/splitguard/data"

	"github.com/splitguard/splitguard/metrics"
)

// BatchRecord is one line of batches.jsonl.
type BatchRecord struct {
	Step      int64   `json:"step"`
	Epoch     int     `json:"epoch"`
	Loss      float64 `json:"loss"`
	Positives int     `json:"positives"`
	Size      int     `json:"size"`
	// Leak maps "ATTACK/LAYER" to the batch's leak AUC; null where it is
	// undefined (a batch of one class).
	Leak      map[string]*float64 `json:"leak"`
	ProtectMS float64             `json:"protect_ms"`
	DCorLoss  *float64            `json:"dcor_loss,omitempty"`
	// Protection holds the protection's own per-batch figures (Marvell's
	// u, v, λ, sumKL, bounds, …).
	Protection map[string]float64 `json:"protection,omitempty"`
	// Parties, in a run with several passive parties, maps each passive
	// party's name, and each colluding subset's ("p1+p2"), to its leak
	// AUCs of the batch keyed as Leak is (what that party, or the union
	// of what the subset's members, received).
	Parties map[string]map[string]*float64 `json:"parties,omitempty"`
}

// EvalRecord is one line of eval.jsonl.
type EvalRecord struct {
	Step     int64   `json:"step"`
	TestAUC  float64 `json:"test_auc"`
	TestLoss float64 `json:"test_loss"`
	ACE      float64 `json:"ace"`
	// Attacks holds the model attacks' figures at this evaluation, keyed
	// "ATTACK/auc", "ATTACK/accuracy", "ATTACK/prior" (model completion).
	Attacks map[string]float64 `json:"attacks,omitempty"`
	// Features holds the feature attacks' figures at this evaluation
	// (package attack/feature: "ATTACK/r2/COL", "ATTACK/r2_mean", …; see
	// feature.Result.Flatten): how well the active party reconstructs
	// the passive party's columns of the test rows.
	Features map[string]float64 `json:"features,omitempty"`
	// ValAUC and ValLoss are the validation split's (absent without one;
	// ValAUC null when the split has a single class).
	ValAUC  *float64 `json:"val_auc,omitempty"`
	ValLoss *float64 `json:"val_loss,omitempty"`
	// ValAUCWithoutPassive is the validation AUC with the passive
	// party's embedding replaced by its mean (leave-one-party-out, key
	// contribution), and PassiveGain ValAUC minus it: what the joint
	// model gains from the passive party (docs/methods/integrity.md).
	ValAUCWithoutPassive *float64 `json:"val_auc_without_passive,omitempty"`
	PassiveGain          *float64 `json:"passive_gain,omitempty"`
	// Integrity holds each integrity detector's largest score over the
	// training batches since the evaluation before (package integrity).
	Integrity map[string]float64 `json:"integrity,omitempty"`
	// ValAUCWithoutParty and PartyGain, with several passive parties and
	// key contribution, are the validation AUC with each passive party's
	// embedding replaced by its means, and ValAUC minus it, keyed by the
	// party's name.
	ValAUCWithoutParty map[string]*float64 `json:"val_auc_without_party,omitempty"`
	PartyGain          map[string]*float64 `json:"party_gain,omitempty"`
	// PartyAttacks, with several passive parties, are the model attacks'
	// figures (keyed as Attacks) on each passive party's bottom and on
	// each colluding subset's bottoms pooled, keyed by the party's or
	// subset's name ("p1+p2").
	PartyAttacks map[string]map[string]float64 `json:"party_attacks,omitempty"`
}

// BaselineSummary is the logistic-regression baseline of a tabular run
// (package baseline) in summary.json.
type BaselineSummary struct {
	// Model says what was fitted; Columns whose columns: "all" (the
	// in-process run: the centralised model nobody could train without
	// pooling the data) or "active party's own" (a networked run: what
	// the active party gets without the passive party).
	Model   string `json:"model"`
	Columns string `json:"columns"`
	// ValAUC and TestAUC are null where undefined (no validation split).
	ValAUC  *float64 `json:"val_auc"`
	TestAUC *float64 `json:"test_auc"`
	Lambda  float64  `json:"lambda"`
	// TrainRows were fitted on; Capped says the row cap (key
	// baseline_rows) cut the training split.
	TrainRows  int     `json:"train_rows"`
	Capped     bool    `json:"capped,omitempty"`
	Features   int     `json:"features"`
	Iterations int     `json:"iterations"`
	Converged  bool    `json:"converged"`
	Seconds    float64 `json:"seconds"`
	// Error is why no baseline could be fitted (then the AUCs are null).
	Error string `json:"error,omitempty"`
	// testScores are the baseline's scores of the test rows (not
	// written), for the paired interval of the split model's difference.
	testScores []float64
	// fit is the fitted model (nil after an error).
	fit *baseline.Result
}

// Fit returns the fitted logistic regression (nil when none was fitted):
// its weights, for a model started from it.
func (b *BaselineSummary) Fit() *baseline.Result { return b.fit }

// Summary is summary.json.
//
// The run's result is the model selected without looking at the test
// split (Select: the best validation AUC, or the last evaluation) and its
// test figures, TestAUCSelected & co., each measured once. TestAUCBest
// and BestStep are the top of the per-step test curve the papers plot:
// chosen by looking at the test split, so an optimistic figure kept for
// comparison with them, not a result.
type Summary struct {
	TestAUCBest  float64 `json:"test_auc_best"`
	TestAUCFinal float64 `json:"test_auc_final"`
	// BestStep is the step of the evaluation with the best test AUC.
	BestStep int64 `json:"best_step"`
	// TestAUCBestNote says what TestAUCBest is.
	TestAUCBestNote string `json:"test_auc_best_note"`

	// Select is how the model was selected (best: the best validation
	// AUC; last); SelectedStep is its evaluation's step, and the Selected
	// figures are that evaluation's. ValAUCSelected is null without a
	// validation split; ValAUCBest is the best validation AUC seen.
	Select           string   `json:"select"`
	SelectedStep     int64    `json:"selected_step"`
	TestAUCSelected  float64  `json:"test_auc_selected"`
	TestLossSelected float64  `json:"test_loss_selected"`
	ACESelected      float64  `json:"ace_selected"`
	ValAUCSelected   *float64 `json:"val_auc_selected"`
	// TestAUCSelectedCI95 is the 95% percentile interval of
	// TestAUCSelected from 1,000 Poisson bootstrap replicates of the test
	// rows seeded by the run's seed (metrics.AUCBootstrap): the spread
	// that the test split's size alone allows. Absent when the selected
	// evaluation ran in an earlier process of a resumed run.
	TestAUCSelectedCI95 *[2]float64 `json:"test_auc_selected_ci95,omitempty"`
	// TestAUCMinusBaselineCI95 is the 95% paired bootstrap interval of
	// TestAUCSelected − Baseline.TestAUC on the same test rows (1,000
	// Poisson replicates weighing each row once for both models;
	// metrics.AUCDiffBootstrap): whether the split model is really below
	// the baseline, or only on this test split. Absent without a baseline
	// or the selected evaluation's scores.
	TestAUCMinusBaselineCI95 *[2]float64 `json:"test_auc_minus_baseline_ci95,omitempty"`
	ValAUCBest               *float64    `json:"val_auc_best"`
	ValRows                  int         `json:"val_rows"`
	// ValPositives is the number of positives among the ValRows
	// validation rows (the standard error of a validation AUC needs it).
	ValPositives int     `json:"val_positives"`
	ValFrac      float64 `json:"val_frac"`
	// EarlyStopped says training ended after EarlyStop evaluations without
	// a better validation AUC, before its planned steps.
	EarlyStopped bool `json:"early_stopped,omitempty"`
	// Baseline is the logistic-regression baseline (tables only).
	Baseline *BaselineSummary `json:"baseline,omitempty"`
	// TrainLossFirst and TrainLossLast are the mean training losses of
	// the first and the last tenth of the steps (at most 50 steps each).
	TrainLossFirst float64 `json:"train_loss_first"`
	TrainLossLast  float64 `json:"train_loss_last"`
	// Warnings are what the user should look at before trusting the run
	// (a split model below the baseline, a loss that did not fall).
	Warnings []string `json:"warnings,omitempty"`
	// WarningKeys are, for a warning of Warnings that names configuration
	// keys ("key lr"), those keys (see KeyedWarnings); not in summary.json.
	WarningKeys map[string][]string `json:"-"`
	// Auto lists the settings chosen from the data (config.yaml's auto).
	Auto []string `json:"auto,omitempty"`
	// CheckpointFallbacks are the resumes of a two-process run from the
	// checkpoint before the acknowledged one, because one party's copy of
	// that one was lost, oldest first.
	CheckpointFallbacks []CheckpointFallback `json:"checkpoint_fallbacks,omitempty"`

	TestLossFinal float64 `json:"test_loss_final"`
	// TestLossNote says what the test loss includes.
	TestLossNote   string  `json:"test_loss_note"`
	ACEFinal       float64 `json:"ace_final"`
	ACEBest        float64 `json:"ace_best"`
	ACEBins        int     `json:"ace_bins"`
	TrainLossFinal float64 `json:"train_loss_final"`

	Steps         int64   `json:"steps"`
	Epochs        int     `json:"epochs"`
	Examples      int64   `json:"examples"`
	Seconds       float64 `json:"seconds"`
	ExamplesPerS  float64 `json:"examples_per_s"`
	ProtectMSMean float64 `json:"protect_ms_mean"`
	StepMSMean    float64 `json:"step_ms_mean"`

	Leak map[string]metrics.LeakSummary `json:"leak"`
	// Tuned is every tuned attacker's final choice, keyed
	// "ATTACK_tuned/LAYER" for the per-batch attacks
	// (audit.Auditor.TunedChoices) and "ATTACK_tuned" for the model
	// attacks at the last evaluation; absent when the tuned attackers are
	// off.
	Tuned map[string]string `json:"tuned,omitempty"`

	TrainRows      int     `json:"train_rows"`
	TestRows       int     `json:"test_rows"`
	TrainPosRate   float64 `json:"train_pos_rate"`
	BadRowsSkipped int64   `json:"bad_rows_skipped"`
	Engine         string  `json:"engine"`
	Protect        string  `json:"protect"`
	// Privacy is what the defences' privacy accountants report for the
	// run (e.g. grad_dp_eps, grad_dp_delta, grad_dp_releases), absent
	// when no defence has one.
	Privacy   map[string]float64 `json:"privacy,omitempty"`
	Truncated bool               `json:"truncated,omitempty"`
	// TruncatedReason says why a truncated run ended before its planned
	// steps (max_steps, the peer ending the run, an error).
	TruncatedReason string `json:"truncated_reason,omitempty"`
	// Signal names the signal that ended a truncated run ("SIGINT",
	// "SIGTERM"), when one did.
	Signal string `json:"signal,omitempty"`
	// EvalAttacksFinal and EvalAttacksBest are the model attacks' figures
	// (EvalRecord.Attacks) at the last evaluation and the largest value of
	// each over the evaluations.
	EvalAttacksFinal map[string]float64 `json:"eval_attacks_final,omitempty"`
	EvalAttacksBest  map[string]float64 `json:"eval_attacks_best,omitempty"`
	// FeatureLeakSelected, FeatureLeakFinal and FeatureLeakBest are the
	// feature attacks' figures (EvalRecord.Features) at the selected
	// evaluation (the model the run keeps), at the last one, and the
	// largest value of each over the evaluations; the run's summary
	// figure is FeatureLeakSelected's "ATTACK/r2_mean".
	FeatureLeakSelected map[string]float64 `json:"feature_leak_selected,omitempty"`
	FeatureLeakFinal    map[string]float64 `json:"feature_leak_final,omitempty"`
	FeatureLeakBest     map[string]float64 `json:"feature_leak_best,omitempty"`
	// PassiveGainFinal and PassiveGainSelected are EvalRecord.PassiveGain
	// at the last and at the selected evaluation (absent without key
	// contribution or a validation split).
	PassiveGainFinal    *float64 `json:"passive_gain_final,omitempty"`
	PassiveGainSelected *float64 `json:"passive_gain_selected,omitempty"`
	// GainOverOwnBaseline is the selected evaluation's validation AUC
	// minus that of the baseline on the active party's own columns (what
	// it gets alone; absent when the baseline is on other columns or a
	// validation AUC is undefined).
	GainOverOwnBaseline *float64 `json:"gain_over_own_baseline,omitempty"`
	// Integrity is each integrity detector's largest score over the run,
	// and IntegrityAlarm the alarm that ended it, if one did (then
	// TruncatedReason says so too).
	Integrity      map[string]float64 `json:"integrity,omitempty"`
	IntegrityAlarm string             `json:"integrity_alarm,omitempty"`
	// IntegrityAlarms are the detectors that reached their alarm
	// thresholds (key integrity_alarm) without ending the run, one
	// record each (integrity_alarm.go).
	IntegrityAlarms []IntegrityAlarmRecord `json:"integrity_alarms,omitempty"`
	// Backdoor is the outcome of the passive party's backdoor attack,
	// when it planted one.
	Backdoor *BackdoorSummary `json:"backdoor,omitempty"`
	// Parties, in a run with several passive parties, are each passive
	// party's and each colluding subset's figures, keyed by name
	// (PartySummary; the top-level Leak is the coalition of them all).
	Parties map[string]PartySummary `json:"parties,omitempty"`
}

// CheckpointFallback records a two-process run that resumed at step To,
// the checkpoint before the acknowledged step From, because one party's
// checkpoint of From was corrupt or missing (Reason says which).
type CheckpointFallback struct {
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Reason string `json:"reason"`
}

// EpochRecord is one line of epochs.jsonl: the epoch attacks' leak AUCs
// over every example seen up to the end of the epoch.
type EpochRecord struct {
	Epoch int                 `json:"epoch"`
	Leak  map[string]*float64 `json:"leak"`
}

// Line is a one-line account of the baseline for logs and the closing
// table.
func (b *BaselineSummary) Line() string {
	if b.Error != "" {
		return "baseline: none (" + b.Error + ")"
	}
	f := func(x *float64) string {
		if x == nil {
			return "—"
		}
		return fmt.Sprintf("%.4f", *x)
	}
	capped := ""
	if b.Capped {
		capped = ", capped"
	}
	return fmt.Sprintf("baseline (logistic regression, %s columns): validation AUC %s, test AUC %s (λ %g, %d rows%s, %d weights, %.1fs)",
		b.Columns, f(b.ValAUC), f(b.TestAUC), b.Lambda, b.TrainRows, capped, b.Features, b.Seconds)
}

// FitBaseline fits the logistic baseline (package baseline) on train,
// scored on val and test, reading at most maxRows training rows (0: the
// package's cap); columns says whose columns they are. A failure is
// recorded in the result's Error rather than ending the run.
func FitBaseline(train, val, test *data.Dataset, maxRows int, columns string) *BaselineSummary {
	return FitBaselineContext(context.Background(), train, val, test, maxRows, columns, false)
}

// FitBaselineContext is FitBaseline that gives up (recording ctx's error)
// once ctx is done, and with serial keeps to one core (the same figures):
// for a fit running beside training.
func FitBaselineContext(ctx context.Context, train, val, test *data.Dataset, maxRows int, columns string, serial bool) *BaselineSummary {
	start := time.Now()
	out := &BaselineSummary{Model: "logistic regression (L2 chosen on validation, L-BFGS; one-hot categoricals, standardised numerics)", Columns: columns}
	r, err := baseline.FitContext(ctx, train, val, test, baseline.Options{MaxRows: maxRows, Serial: serial})
	out.Seconds = time.Since(start).Seconds()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defined := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	out.ValAUC, out.TestAUC = defined(r.ValAUC), defined(r.TestAUC)
	out.Lambda, out.TrainRows, out.Capped, out.Features = r.Lambda, r.TrainRows, r.Capped, r.Features
	out.Iterations, out.Converged = r.Iterations, r.Converged
	out.testScores = r.TestScores
	out.fit = r
	return out
}
