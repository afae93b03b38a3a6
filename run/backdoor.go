package run

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// newBackdoor builds the passive party's backdoor attack of the
// configuration (nil for an honest party): the evaluation side draws the
// known rows of the target class from the training labels and hands
// their IDs, with the passive's own rows, to the attack.
func newBackdoor(cfg *config.Config, pv, av *view) (integrity.Backdoor, []uint64, error) {
	if cfg.Backdoor == "" {
		return nil, nil, nil
	}
	known := cfg.BackdoorKnownIDs
	if len(known) == 0 {
		known = cfg.KnownTargetRows(av.train.IDs, av.train.Labels)
	}
	if len(known) == 0 {
		return nil, nil, fmt.Errorf("backdoor %s: the training split has no row of the target class %d", cfg.Backdoor, cfg.BackdoorTarget)
	}
	bd, err := cfg.NewBackdoor(known, pv.train.IDs, pv.train.X)
	return bd, known, err
}

// backdoorRows is how many test rows the outcome scores at once.
const backdoorRows = 2048

// backdoorOutcome scores the models as they are on the test split, clean
// and with the attack's trigger on every row: the clean test AUC and the
// attack success rate (metrics.AttackSuccessRate).
func backdoorOutcome(cfg *config.Config, bd integrity.Backdoor, known []uint64, bottom model.Bottom, top model.Top, wide bool, pv, av *view) (*rundir.BackdoorSummary, error) {
	n := len(av.test.IDs)
	clean := make([]float32, n)
	trig := make([]float32, n)
	var pb, ab data.Batch
	rows := make([]int, 0, backdoorRows)
	for s := 0; s < n; s += backdoorRows {
		rows = rowChunk(rows, s, n, backdoorRows)
		w := wideBatch(wide, av.test.X, rows, &ab)
		for _, triggered := range []bool{false, true} {
			pv.test.X.Gather(rows, &pb)
			if triggered {
				bd.TriggerFeatures(&pb)
			}
			e, err := bottom.Forward(&pb)
			if err != nil {
				return nil, fmt.Errorf("backdoor outcome: %w", err)
			}
			if triggered {
				e = e.Clone()
				bd.TriggerEmbedding(e)
			}
			logits, err := top.Forward(e, w)
			if err != nil {
				return nil, fmt.Errorf("backdoor outcome: %w", err)
			}
			dst := clean
			if triggered {
				dst = trig
			}
			copy(dst[s:], logits)
		}
	}
	return backdoorSummary(cfg, bd, known, clean, trig, av)
}

// rowChunk fills rows with the rows s, s+1, … up to size of them, below
// n.
func rowChunk(rows []int, s, n, size int) []int {
	rows = rows[:0]
	for r := s; r < min(s+size, n); r++ {
		rows = append(rows, r)
	}
	return rows
}

// wideBatch gathers the active party's rows of x into ab for a top with
// a wide part (nil without one).
func wideBatch(wide bool, x *data.Features, rows []int, ab *data.Batch) *data.Batch {
	if !wide {
		return nil
	}
	x.Gather(rows, ab)
	return ab
}

// backdoorSummary is the backdoor's outcome from the test rows' logits
// without (clean) and with the trigger (trig): the attack success rate,
// the clean test AUC and, for an attack that infers the target class, the
// precision of its inference.
func backdoorSummary(cfg *config.Config, bd integrity.Backdoor, known []uint64, clean, trig []float32, av *view) (*rundir.BackdoorSummary, error) {
	n := len(av.test.IDs)
	asr, asrRows, err := metrics.AttackSuccessRate(trig, av.test.Labels, uint8(cfg.BackdoorTarget))
	if err != nil {
		return nil, err
	}
	cleanRate, _, err := metrics.AttackSuccessRate(clean, av.test.Labels, uint8(cfg.BackdoorTarget))
	if err != nil {
		return nil, err
	}
	byConf, err := metrics.AttackSuccessByConfidence(clean, trig, av.test.Labels, uint8(cfg.BackdoorTarget), 4)
	if err != nil {
		return nil, err
	}
	scores := make([]float64, n)
	for i, v := range clean {
		scores[i] = float64(v)
	}
	auc, _ := metrics.AUC(scores, av.test.Labels, nil)
	out := &rundir.BackdoorSummary{Attack: cfg.Backdoor, Target: cfg.BackdoorTarget, DryRun: cfg.BackdoorDryRun, Known: len(known), KnownIDs: known, From: cfg.BackdoorFrom,
		ASR: asr, ASRRows: asrRows, CleanRate: cleanRate, CleanTestAUC: auc, ASRByConfidence: byConf}
	if inf, ok := bd.(interface{ Inferred() []uint64 }); ok && !cfg.BackdoorDryRun {
		label := make(map[uint64]uint8, len(av.train.IDs))
		for i, id := range av.train.IDs {
			label[id] = av.train.Labels[i]
		}
		ids := inf.Inferred()
		hit := 0
		for _, id := range ids {
			if int(label[id]) == cfg.BackdoorTarget {
				hit++
			}
		}
		out.Inferred = len(ids)
		if len(ids) > 0 {
			p := float64(hit) / float64(len(ids))
			out.InferredPrecision = &p
		}
	}
	return out, nil
}

// recordBackdoor puts the backdoor's outcome (none for an honest party)
// in the summary and the log.
func recordBackdoor(cfg *config.Config, rec *rundir.Recorder, bd integrity.Backdoor, known []uint64, bottom model.Bottom, top model.Top, wide bool, pv, av *view, opt Options) error {
	if bd == nil || av.test == nil || len(av.test.IDs) == 0 {
		return nil
	}
	out, err := backdoorOutcome(cfg, bd, known, bottom, top, wide, pv, av)
	if err != nil {
		return err
	}
	logBackdoor(rec, out, opt)
	return nil
}

// logBackdoor logs the backdoor's outcome and puts it in the summary.
func logBackdoor(rec *rundir.Recorder, out *rundir.BackdoorSummary, opt Options) {
	logf(opt.logger(), "backdoor %s: attack success rate %.4f on %d test rows not of class %d (%.4f of them without the trigger); clean test AUC %.4f",
		out.Attack, out.ASR, out.ASRRows, out.Target, out.CleanRate, out.CleanTestAUC)
	if len(out.ASRByConfidence) > 0 {
		logf(opt.logger(), "backdoor %s: attack success rate by the clean model's confidence in another class, most confident quarter first: %s",
			out.Attack, formatRates(out.ASRByConfidence))
	}
	if out.InferredPrecision != nil {
		logf(opt.logger(), "backdoor %s: %d training rows held to be of the target class, %.3f of them are",
			out.Attack, out.Inferred, *out.InferredPrecision)
	}
	if v := out.VflipRows; v != nil {
		logf(opt.logger(), "backdoor %s: VFLIP at inference (vflip_rows, threshold %g): row detection AUC %.4f; rows flagged %.3f clean, %.3f triggered (the cheater's block %.3f); purified: attack success rate %.4f, clean rate %.4f, clean test AUC %.4f",
			out.Attack, v.Threshold, v.DetectionAUC, v.FlaggedClean, v.FlaggedTriggered, v.CheaterFlagged, v.ASR, v.CleanRate, v.CleanTestAUC)
	}
	rec.SetBackdoor(out)
}

// formatRates writes rates to three decimals, separated by " / ".
func formatRates(r []float64) string {
	s := ""
	for i, v := range r {
		if i > 0 {
			s += " / "
		}
		s += fmt.Sprintf("%.3f", v)
	}
	return s
}
