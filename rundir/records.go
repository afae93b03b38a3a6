package rundir

import "github.com/splitguard/splitguard/metrics"

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
}

// Summary is summary.json.
type Summary struct {
	TestAUCBest  float64 `json:"test_auc_best"`
	TestAUCFinal float64 `json:"test_auc_final"`
	// BestStep is the step of the evaluation with the best test AUC.
	BestStep      int64   `json:"best_step"`
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
	// EvalAttacksFinal and EvalAttacksBest are the model attacks' figures
	// (EvalRecord.Attacks) at the last evaluation and the largest value of
	// each over the evaluations.
	EvalAttacksFinal map[string]float64 `json:"eval_attacks_final,omitempty"`
	EvalAttacksBest  map[string]float64 `json:"eval_attacks_best,omitempty"`
}

// EpochRecord is one line of epochs.jsonl: the epoch attacks' leak AUCs
// over every example seen up to the end of the epoch.
type EpochRecord struct {
	Epoch int                 `json:"epoch"`
	Leak  map[string]*float64 `json:"leak"`
}
