package rundir

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/party/active"
)

// OwnColumns is BaselineSummary.Columns of a baseline on the active
// party's own columns.
const OwnColumns = "active party's own"

// ObserveIntegrity records the integrity detectors' scores of one
// training batch (package integrity): the next evaluation record holds
// each one's largest since the evaluation before, the summary its
// largest over the run.
func (r *Recorder) ObserveIntegrity(scores map[string]float64) {
	if len(scores) == 0 {
		return
	}
	if r.integSince == nil {
		r.integSince, r.integMax = map[string]float64{}, map[string]float64{}
	}
	for k, v := range scores {
		if old, ok := r.integSince[k]; !ok || v > old {
			r.integSince[k] = v
		}
		if old, ok := r.integMax[k]; !ok || v > old {
			r.integMax[k] = v
		}
	}
}

// Alarm ends the run on an integrity detector's alarm (msg says which,
// when and why): the summary marks it truncated with msg as the reason
// and IntegrityAlarm set.
func (r *Recorder) Alarm(msg string) {
	r.alarm = msg
	r.Truncate(msg)
}

// evalIntegrity adds the contribution measure and the detectors' scores
// since the last evaluation to e.
func (r *Recorder) evalIntegrity(e *EvalRecord, res *active.EvalResult) {
	if res.ValRows > 0 && !math.IsNaN(res.ValAUCWithout) {
		w := res.ValAUCWithout
		e.ValAUCWithoutPassive = &w
		if e.ValAUC != nil {
			g := *e.ValAUC - w
			e.PassiveGain = &g
		}
	}
	if len(r.integSince) > 0 {
		e.Integrity = maps.Clone(r.integSince)
		clear(r.integSince)
	}
}

// summaryIntegrity fills the summary's integrity fields.
func (r *Recorder) summaryIntegrity(s *Summary, last EvalRecord) {
	s.PassiveGainFinal = last.PassiveGain
	if sel, ok := r.Selected(); ok {
		s.PassiveGainSelected = sel.PassiveGain
	}
	if b := r.baseline; b != nil && b.Columns == OwnColumns && b.ValAUC != nil {
		if sel, ok := r.Selected(); ok && sel.ValAUC != nil {
			g := *sel.ValAUC - *b.ValAUC
			s.GainOverOwnBaseline = &g
		}
	}
	if len(r.integMax) > 0 {
		s.Integrity = maps.Clone(r.integMax)
	}
	s.IntegrityAlarm = r.alarm
	r.summaryAlarms(s)
	s.Backdoor = r.backdoor
}

// integrityLog is the part of an evaluation's log line that gives the
// passive party's gain and the detectors' scores ("" when none).
func integrityLog(e EvalRecord) string {
	var b strings.Builder
	if e.PassiveGain != nil {
		fmt.Fprintf(&b, "  passive gain %.4f", *e.PassiveGain)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Integrity)) {
		fmt.Fprintf(&b, "  %s %.3g", k, e.Integrity[k])
	}
	return b.String()
}

// BackdoorSummary is the outcome of a passive party's backdoor attack
// (package integrity): the attack success rate of the final models on
// the test split (the share of its rows not of the target class that are
// predicted as the target once triggered) and the clean test AUC beside
// it.
type BackdoorSummary struct {
	Attack string `json:"attack"`
	Target int    `json:"target"`
	// Known is how many training rows of the target class the attacker
	// was told of, KnownIDs their IDs (key backdoor_known_ids reproduces
	// the run); From the first step it changed anything.
	// DryRun: the party stayed honest; ASR is the trigger's on an
	// honestly trained model.
	DryRun   bool     `json:"dry_run,omitempty"`
	Known    int      `json:"known"`
	KnownIDs []uint64 `json:"known_ids"`
	From     int64    `json:"from"`
	// ASR and ASRRows: the attack success rate over ASRRows test rows.
	ASR     float64 `json:"asr"`
	ASRRows int     `json:"asr_rows"`
	// CleanRate is the same share without the trigger: the clean
	// model's rate of those rows predicted as the target (its
	// false-positive rate for target 1), the floor a harmless trigger
	// leaves the attack success rate at.
	CleanRate float64 `json:"clean_rate"`
	// CleanTestAUC is the final models' test AUC without the trigger.
	CleanTestAUC float64 `json:"clean_test_auc"`
	// ASRByConfidence is the attack success rate in each quarter of the
	// same rows, ordered by the clean model's confidence that they are
	// not of the target class, the most confident quarter first
	// (metrics.AttackSuccessByConfidence; absent with fewer than 4 rows).
	ASRByConfidence []float64 `json:"asr_by_confidence,omitempty"`
	// Inferred and InferredPrecision, for an attack that infers which
	// training rows are of the target class (VILLAIN): how many it holds
	// to be (the known ones included), and the share of them that are.
	Inferred          int      `json:"inferred,omitempty"`
	InferredPrecision *float64 `json:"inferred_precision,omitempty"`
	// VflipRows is VFLIP's identification and purification of the test
	// rows at inference (detector vflip_rows), absent without it.
	VflipRows *VflipRowsSummary `json:"vflip_rows,omitempty"`
}

// VflipRowsSummary is VFLIP at inference on the test split
// (integrity.VflipRows): each row scored clean and with the trigger,
// flagged blocks replaced by their reconstruction before the top runs.
type VflipRowsSummary struct {
	// Threshold is the z-score past which a pair votes.
	Threshold float64 `json:"threshold"`
	// DetectionAUC is the AUC of the row score, the test rows with the
	// trigger against the same rows without it.
	DetectionAUC float64 `json:"detection_auc"`
	// FlaggedClean and FlaggedTriggered are the shares of test rows
	// with any block flagged, without and with the trigger;
	// CheaterFlagged the share of triggered rows whose cheater's block
	// is flagged.
	FlaggedClean     float64 `json:"flagged_clean"`
	FlaggedTriggered float64 `json:"flagged_triggered"`
	CheaterFlagged   float64 `json:"cheater_flagged"`
	// ASR, CleanRate and CleanTestAUC are BackdoorSummary's after
	// purification (the attack success rate, the clean rate, the clean
	// test AUC, the last against the unpurified one its cost).
	ASR          float64 `json:"asr_purified"`
	CleanRate    float64 `json:"clean_rate_purified"`
	CleanTestAUC float64 `json:"clean_test_auc_purified"`
}

// SetBackdoor records a backdoor attack's outcome in the summary.
func (r *Recorder) SetBackdoor(b *BackdoorSummary) { r.backdoor = b }
