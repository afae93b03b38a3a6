package config

// The values of key wide_start: where the wide part of Wide&Deep starts.
const (
	// WideStartBaseline starts the wide part at the logistic baseline
	// fitted on the same columns and rows (the baseline waits for no
	// step: training waits for it), keeps the baseline's L2 penalty λ
	// (chosen on the validation split) on the wide weights, and starts
	// the deep part's logit weights at zero, so that the model's score
	// before its first step is the baseline's.
	WideStartBaseline = "baseline"
	// WideStartRandom draws the wide part's weights at random and leaves
	// them unpenalised (the wide embeddings keep key l2): the authors'
	// model.
	WideStartRandom = "random"
)

// AutoStartRows is the number of training rows below which the wide
// part starts at the baseline by default: baseline.DefaultMaxRows, so that
// the baseline started from is fitted on every training row (and takes
// seconds, which training waits for).
const AutoStartRows = 50_000

// AutoWideStart is the rule's wide_start for n training rows:
// WideStartBaseline below AutoStartRows rows when the learning rate is
// chosen from the data too and the run can start from the baseline
// (canStart: a Wide&Deep model, the baseline fitted on every training
// row, one passive party, in process), else the authors' WideStartRandom.
//
// Why (experiments/own-data.md, "Starting from the baseline"): on tables
// of a few hundred rows and many columns (pdspeech: 751 columns for 201
// rows) the split model had nothing to hold its wide part near the
// penalised solution the baseline finds, and at the tiny tables' learning
// rate the deep part fitted noise within the first evaluations, so the
// model selected on a 20–40-row validation split trailed the baseline by
// 0.04–0.16 on some seeds. Started at the baseline, with its penalty kept,
// the model is the baseline before its first step and the deep part adds
// only what the gradient finds; the learning rate of such a run below
// AutoTinyRows is then AutoSmallLR (the tiny tables' AutoTinyLR was there
// to find the linear signal sooner, which the start now gives). The
// boundary was first AutoTinyRows; on tables of 2,000–50,000 rows the
// selection's noise still put single seeds 0.02–0.05 below the baseline
// (resumenames, lendingclub, stackoverflow), and a pre-registered check on
// five tables new to the project moved it to AutoStartRows. Tables of
// AutoStartRows rows or more (Criteo's scale) keep the authors' model.
func AutoWideStart(n int, lrFromData, canStart bool) string {
	if lrFromData && canStart && n < AutoStartRows {
		return WideStartBaseline
	}
	return WideStartRandom
}

// canStartFromBaseline says whether a run of this configuration can start
// its wide part from the baseline: a model with a wide part, the baseline
// fitted, and one passive party in process (TwoProcess unset).
func (c *Config) canStartFromBaseline() bool {
	k, err := c.modelKind()
	return err == nil && k.Wide && c.Baseline && !c.MultiParty() && !c.TwoProcess
}

// validateWideStart checks key wide_start.
func (c *Config) validateWideStart(bad func(string, ...any)) {
	switch c.WideStart {
	case "", WideStartRandom:
	case WideStartBaseline:
		if !c.canStartFromBaseline() {
			bad("the wide part's start %q (key wide_start) needs a Wide&Deep model, the baseline (key baseline) and one passive party trained in process; "+
				"two-process and several-party runs start at random", c.WideStart, keyArg("wide_start"))
		}
	default:
		bad("the wide part's start %q, want %s or %s (key wide_start)", c.WideStart, WideStartBaseline, WideStartRandom, keyArg("wide_start"))
	}
}
