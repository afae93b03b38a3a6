package netrun

import (
	"fmt"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
)

// holdOut prepares a party's aligned rows for training, the same way on
// both sides without any message: it moves the validation rows (the keyed
// hash of (seed, ID), data.SplitValidation) out of split.Train, fills the
// settings left to the data from the number of training rows that remain
// (config.Config.ResolveForData; both parties know it after the
// alignment), and returns the evaluation rows — validation, then test —
// and how many of them are validation rows. Model selection and early
// stopping resolve as in process: the active party decides both and tells
// the passive in its answers to the evaluation rounds.
func holdOut(cfg *Config, split *data.Split) (eval *data.Dataset, valRows int, err error) {
	train, val := data.SplitValidation(split.Train, cfg.Seed, cfg.ValFrac)
	if len(train.IDs) < 2 {
		return nil, 0, config.Keyed(fmt.Errorf("only %d training examples left after the validation hold-out (key val_frac)", len(train.IDs)), "val_frac")
	}
	split.Train = train
	cfg.TwoProcess = true // key wide_start: the run is not in one process
	cfg.ResolveForData(len(train.IDs))
	if len(val.IDs) == 0 {
		return split.Test, 0, nil
	}
	eval, err = data.Concat(val, split.Test)
	return eval, len(val.IDs), err
}

// seq returns the integers lo, …, hi−1.
func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}
