package config

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/data"
)

// Settings left to the data. A zero Epochs, Batch or LR and a negative
// EvalEvery or EarlyStop mean "choose from the data": once the training
// rows are known, [Config.ResolveForData] fills them by the rule below and
// lists them in Auto (config.yaml shows both). An explicit value always
// wins. The reproduction configs (experiments/*.yaml) give every value
// explicitly, so they keep the authors' settings.
//
// The rule for tables (Wide&Deep and the MLP), n the number of training
// rows after the test and validation hold-outs:
//
//   - batch: the largest power of two ≤ n/50, within [AutoMinBatch,
//     AutoMaxBatch] (so an epoch has about 50 steps or more);
//   - epochs: enough for about AutoTargetSteps steps, ⌈AutoTargetSteps /
//     steps per epoch⌉, within [1, AutoMaxEpochs];
//   - learning rate: AutoTinyLR below AutoTinyRows rows (with so few
//     rows the deep part memorises them within a few hundred steps, so
//     the linear signal must be found sooner), AutoSmallLR below
//     AutoLargeRows rows, else the authors' DefaultDeepLR (the Criteo
//     scale);
//   - the wide part's numeric columns: standardised below AutoTinyRows
//     rows when the learning rate is chosen from the data too, else
//     min–max scaled as the authors' model reads them (AutoWideDense,
//     widedense.go);
//   - the wide part's start: the logistic baseline's solution, with its
//     penalty, below AutoStartRows rows when the learning rate is chosen
//     from the data too and the run is one passive party in process
//     (AutoWideStart, widestart.go), and then the learning rate below
//     AutoTinyRows is AutoSmallLR, not AutoTinyLR; else at random, the
//     authors' model;
//   - evaluation: every min(steps per epoch, 100) steps, and at most
//     AutoEvalsPerEpoch an epoch (AutoEvalEvery): each evaluation reads
//     the validation and test splits, about a quarter of an epoch's rows,
//     so on a large table an evaluation every 100 steps would read more
//     rows than the steps between them train on;
//   - early stopping: after AutoEarlyStop evaluations without a better
//     validation AUC, when there is a validation split; where evaluations
//     are further apart than 100 steps, after as many as span about
//     AutoPatienceSteps steps, at least AutoMinEarlyStop
//     (AutoEarlyStopFor);
//   - the selection's margin: a standard error of the kept validation AUC
//     when the wide part starts at the baseline, else none
//     (AutoSelectMargin, selectmargin.go).
//
// Images (the CNN) keep fixed defaults: 1 epoch of batch 1024 at the
// model's learning rate, an evaluation every 100 steps, no early stopping.
//
// The rule reads only the number of training rows, never the labels:
// both parties of a networked run know that number after aligning their
// IDs, so they derive the same batch size and epochs without the passive
// party learning anything about the labels.
const (
	AutoMinBatch    = 32
	AutoMaxBatch    = 1024
	AutoTargetSteps = 4000
	AutoMaxEpochs   = 100
	AutoTinyRows    = 2000
	AutoTinyLR      = 1e-2
	AutoSmallLR     = 1e-3
	AutoLargeRows   = 1_000_000
	AutoEarlyStop   = 10
	// AutoEvalsPerEpoch is the most evaluations an epoch the rule plans
	// on tables of more than 400 steps an epoch.
	AutoEvalsPerEpoch = 4
	// AutoPatienceSteps is the span of training steps the rule's early
	// stop waits for a better validation AUC: AutoEarlyStop evaluations
	// 100 steps apart.
	AutoPatienceSteps = 1000
	// AutoMinEarlyStop is the fewest evaluations the rule's early stop
	// waits, however far apart they are.
	AutoMinEarlyStop = 4
	// DefaultValFrac is the share of the training rows held out for
	// validation by default.
	DefaultValFrac = 0.1
	// legacyBatch, legacyEpochs and legacyEvalEvery are the fixed
	// defaults of image runs.
	legacyBatch, legacyEpochs, legacyEvalEvery = 1024, 1, 100
)

// AutoBatch is the rule's batch size for n training rows.
func AutoBatch(n int) int {
	b := AutoMinBatch
	for b*2 <= n/50 && b*2 <= AutoMaxBatch {
		b *= 2
	}
	return b
}

// AutoEpochs is the rule's number of epochs for n rows in batches of b.
func AutoEpochs(n, b int) int {
	steps := max(1, (n+b-1)/b)
	return min(AutoMaxEpochs, max(1, (AutoTargetSteps+steps-1)/steps))
}

// AutoEvalEvery is the rule's evaluation interval, in steps, for an
// epoch of steps steps: min(steps, 100), or ⌈steps / AutoEvalsPerEpoch⌉
// where that is longer.
func AutoEvalEvery(steps int) int {
	return min(steps, max(100, (steps+AutoEvalsPerEpoch-1)/AutoEvalsPerEpoch))
}

// AutoEarlyStopFor is the rule's early stop, in evaluations, for
// evaluations every evalEvery steps: AutoEarlyStop up to 100 steps apart,
// beyond that as many as span AutoPatienceSteps, at least
// AutoMinEarlyStop.
func AutoEarlyStopFor(evalEvery int) int {
	if evalEvery <= 0 {
		return 0
	}
	return min(AutoEarlyStop, max(AutoMinEarlyStop, (AutoPatienceSteps+evalEvery-1)/evalEvery))
}

// AutoLR is the rule's learning rate for n training rows.
func AutoLR(n int) float64 {
	if n < AutoTinyRows {
		return AutoTinyLR
	}
	if n < AutoLargeRows {
		return AutoSmallLR
	}
	return DefaultDeepLR
}

// ResolveForData fills the settings left to the data (see the rule
// above) for nTrain training rows and records their keys in Auto; the
// other defaults are filled as [Config.Resolve] does. It is idempotent.
func (c *Config) ResolveForData(nTrain int) {
	c.Resolve()
	var auto []string
	set := func(key string, unset bool, apply func()) {
		if unset {
			apply()
			auto = append(auto, key)
		}
	}
	if c.isCNN() || data.IsImageFormat(c.Format) {
		set("batch", c.Batch == 0, func() { c.Batch = legacyBatch })
		set("epochs", c.Epochs == 0, func() { c.Epochs = legacyEpochs })
		set("eval_every", c.EvalEvery < 0, func() { c.EvalEvery = legacyEvalEvery })
		set("early_stop", c.EarlyStop < 0, func() { c.EarlyStop = 0 })
	} else {
		set("batch", c.Batch == 0, func() { c.Batch = AutoBatch(nTrain) })
		set("epochs", c.Epochs == 0, func() { c.Epochs = AutoEpochs(nTrain, c.Batch) })
		lrFromData := c.LR == 0
		set("wide_start", c.WideStart == "", func() {
			// The baseline started from must be fitted on every training row.
			canStart := c.canStartFromBaseline() && (c.BaselineRows == 0 || c.BaselineRows >= nTrain)
			c.WideStart = AutoWideStart(nTrain, lrFromData, canStart)
		})
		set("lr", lrFromData, func() {
			c.LR = AutoLR(nTrain)
			if c.WideStart == WideStartBaseline && c.LR == AutoTinyLR {
				c.LR = AutoSmallLR // the start gives the linear signal (AutoWideStart)
			}
		})
		set("wide_dense", c.WideDense == "", func() { c.WideDense = AutoWideDense(nTrain, lrFromData) })
		steps := max(1, (nTrain+c.Batch-1)/c.Batch)
		set("eval_every", c.EvalEvery < 0, func() { c.EvalEvery = AutoEvalEvery(steps) })
		set("early_stop", c.EarlyStop < 0, func() {
			c.EarlyStop = 0
			if c.ValFrac > 0 && c.EvalEvery > 0 {
				c.EarlyStop = AutoEarlyStopFor(c.EvalEvery)
			}
		})
	}
	if c.Select == "" {
		c.Select = SelectLast
		if c.ValFrac > 0 {
			c.Select = SelectBest
		}
		auto = append(auto, "select")
	}
	if c.SelectMargin == "" {
		c.SelectMargin = AutoSelectMargin(c.Select, c.WideStart)
		auto = append(auto, "select_margin")
	}
	if c.isCNN() && c.EvalBatch == 0 {
		c.EvalBatch = c.Batch
	}
	c.Resolve()                          // the model defaults that follow Batch (the CNN's eval batch)
	c.Auto = append([]string{}, auto...) // empty, not nil: config.yaml says "auto: []"
	c.AutoRows = nTrain
}

// Model selection (key select).
const (
	// SelectBest keeps the model of the evaluation with the best
	// validation AUC.
	SelectBest = "best"
	// SelectLast keeps the model at the end of training.
	SelectLast = "last"
)

// validateSelection checks the validation, selection and early-stopping
// keys.
func (c *Config) validateSelection(bad func(string, ...any)) {
	if !(c.ValFrac >= 0 && c.ValFrac < 1) {
		bad("validation fraction %g, want a fraction in [0, 1) (key val_frac; 0: no validation split)", c.ValFrac, keyArg("val_frac"))
	}
	switch c.Select {
	case "", SelectLast:
	case SelectBest:
		if c.ValFrac == 0 {
			bad("selecting the best model (key select: best) needs a validation split (key val_frac > 0); without one the model is the last", keyArg("select"), keyArg("val_frac"))
		}
	default:
		bad("model selection %q, want %s or %s (key select)", c.Select, SelectBest, SelectLast, keyArg("select"))
	}
	if c.EarlyStop > 0 && c.ValFrac == 0 {
		bad("early stopping after %d evaluations (key early_stop) needs a validation split (key val_frac > 0)", c.EarlyStop, keyArg("early_stop"), keyArg("val_frac"))
	}
	if c.EarlyStop > 0 && c.EvalEvery == 0 {
		bad("early stopping (key early_stop) needs evaluations during training (key eval_every > 0)", keyArg("early_stop"), keyArg("eval_every"))
	}
	if c.BaselineRows < 0 {
		bad("baseline rows %d, want ≥ 0 (0: the default cap)", c.BaselineRows)
	}
}

// YAMLHeader is the comment that opens a resolved config.yaml: which keys
// were chosen from the data, and from how many rows.
func (c *Config) YAMLHeader() string {
	if c.AutoRows == 0 {
		return "# The resolved configuration of this run.\n"
	}
	return fmt.Sprintf("# The resolved configuration of this run. The keys under auto were chosen from the\n"+
		"# %d training rows (docs/CLI.md, \"Defaults that follow the data\"); the others were given or are fixed defaults.\n", c.AutoRows)
}

// AutoNote is the sentence config.yaml and the run log give about the
// settings chosen from the data.
func (c *Config) AutoNote() string {
	if len(c.Auto) == 0 {
		return "every training setting was given"
	}
	vals := make([]string, 0, len(c.Auto))
	for _, k := range c.Auto {
		var v any
		switch k {
		case "batch":
			v = c.Batch
		case "epochs":
			v = c.Epochs
		case "lr":
			v = c.LR
		case "eval_every":
			v = c.EvalEvery
		case "early_stop":
			v = c.EarlyStop
		case "select":
			v = c.Select
		case "wide_dense":
			v = c.WideDense
		case "wide_start":
			v = c.WideStart
		case "select_margin":
			v = c.SelectMargin
		}
		vals = append(vals, fmt.Sprintf("%s %v", k, v))
	}
	return fmt.Sprintf("chosen from the %d training rows (docs/CLI.md, \"Defaults that follow the data\"): %s", c.AutoRows, strings.Join(vals, ", "))
}
