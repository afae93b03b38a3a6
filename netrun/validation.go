package netrun

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// holdOut prepares a party's aligned rows for training, the same way on
// both sides without any message: it moves the validation rows (the keyed
// hash of (seed, ID), data.SplitValidation) out of split.Train, fills the
// settings left to the data from the number of training rows that remain
// (config.Config.ResolveForData; both parties know it after the
// alignment), and returns the evaluation rows — validation, then test —
// and how many of them are validation rows.
//
// A networked run keeps the last model and does not stop early: the
// passive party, which drives the run, never sees a validation AUC.
func holdOut(cfg *Config, split *data.Split) (eval *data.Dataset, valRows int, err error) {
	train, val := data.SplitValidation(split.Train, cfg.Seed, cfg.ValFrac)
	if len(train.IDs) < 2 {
		return nil, 0, fmt.Errorf("only %d training examples left after the validation hold-out (key val_frac)", len(train.IDs))
	}
	split.Train = train
	cfg.ResolveForData(len(train.IDs))
	if slices.Contains(cfg.Auto, "early_stop") {
		cfg.EarlyStop = 0
	}
	if slices.Contains(cfg.Auto, "select") {
		cfg.Select = config.SelectLast
	}
	if len(val.IDs) == 0 {
		return split.Test, 0, nil
	}
	eval, err = data.Concat(val, split.Test)
	return eval, len(val.IDs), err
}

// validateSelection refuses what a networked run cannot do.
func (c *Config) validateSelection(bad func(string, ...any)) {
	if c.EarlyStop > 0 {
		bad("early stopping (key early_stop) is in-process only: the passive party, which drives a networked run, never sees the validation AUC")
	}
	if c.Select == config.SelectBest {
		bad("selecting the best model (key select: best) is in-process only: a networked run keeps the last model and records the validation AUC of every evaluation")
	}
}

// seq returns the integers lo, …, hi−1.
func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}
