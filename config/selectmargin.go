package config

// The values of key select_margin: by how much a later evaluation's
// validation AUC must beat the kept model's to replace it (select: best).
const (
	// SelectMarginOff replaces the kept model by any better validation
	// AUC.
	SelectMarginOff = "off"
	// SelectMarginSE replaces it only by a validation AUC higher than the
	// kept one by more than the kept AUC's standard error (Hanley and
	// McNeil's, from the validation split's positives and negatives:
	// metrics.AUCStdErr); early stopping counts the evaluations since the
	// kept model was replaced.
	SelectMarginSE = "se"
)

// AutoSelectMargin is the rule's select_margin: SelectMarginSE when the
// model is kept on validation (select: best) and its wide part starts at
// the baseline (wide_start: baseline), else SelectMarginOff.
//
// Why (experiments/own-data.md, "Starting from the baseline"): a run that
// starts at the baseline begins with the model to beat, and on the
// validation splits of the tables this applies to (below AutoStartRows
// training rows: 20 to 5,000 rows) the best of 10–30 evaluations' AUCs is
// optimistic by about a standard error: hmda (seed 3)
// kept an evaluation 0.009 above the baseline on validation and 0.043
// below it on test, while its test AUC fell steadily from the first
// evaluation on. A gain must then exceed the noise to be kept. A run
// started at random needs its early gains (its first evaluations are
// below the baseline), so it keeps the authors' rule.
func AutoSelectMargin(selectKey, wideStart string) string {
	if selectKey == SelectBest && wideStart == WideStartBaseline {
		return SelectMarginSE
	}
	return SelectMarginOff
}

// validateSelectMargin checks key select_margin.
func (c *Config) validateSelectMargin(bad func(string, ...any)) {
	switch c.SelectMargin {
	case "", SelectMarginOff:
	case SelectMarginSE:
		if c.Select != "" && c.Select != SelectBest {
			bad("a selection margin (key select_margin: %s) applies to the model kept on validation (key select: %s), not select: %s", c.SelectMargin, SelectBest, c.Select, keyArg("select_margin"), keyArg("select"))
		}
	default:
		bad("selection margin %q, want %s or %s (key select_margin)", c.SelectMargin, SelectMarginSE, SelectMarginOff, keyArg("select_margin"))
	}
}
