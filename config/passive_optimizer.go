package config

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/model"
)

// validatePassiveOptimizer checks the passive party's optimiser and its
// learning rate.
func (c *Config) validatePassiveOptimizer(bad func(string, ...any)) {
	if c.PassiveOptimizer != "" && !slices.Contains(integrity.OptimizerNames(), c.PassiveOptimizer) {
		bad("unknown passive optimizer %q, want one of %v (key passive_optimizer)", c.PassiveOptimizer, integrity.OptimizerNames(), keyArg("passive_optimizer"))
	}
	if c.PassiveOptimizerLR < 0 || c.PassiveOptimizerLR != c.PassiveOptimizerLR {
		bad("passive optimizer learning rate %g, want ≥ 0 (key passive_optimizer_lr)", c.PassiveOptimizerLR, keyArg("passive_optimizer_lr"))
	}
	if c.PassiveOptimizerLR != 0 && c.PassiveOptimizer == "" {
		bad("a passive optimizer learning rate (key passive_optimizer_lr) without a passive optimizer (key passive_optimizer)", keyArg("passive_optimizer_lr"), keyArg("passive_optimizer"))
	}
}

// setPassiveOptimizer gives the passive bottom b the configured optimiser
// (nothing for the honest Adam). Only the tabular bottom of wdl and mlp
// takes one.
func (c *Config) setPassiveOptimizer(b model.Bottom) error {
	if c.PassiveOptimizer == "" {
		return nil
	}
	s, ok := b.(interface{ SetStepper(model.ParamStepper) })
	if !ok {
		return Keyed(fmt.Errorf("passive optimizer %s: the %s model's bottom does not take another optimiser (key passive_optimizer)", c.PassiveOptimizer, c.Model), "passive_optimizer")
	}
	lr := c.PassiveOptimizerLR
	if lr == 0 {
		lr = float64(c.LR)
	}
	opt, err := integrity.NewOptimizer(c.PassiveOptimizer, lr)
	if err != nil {
		return err
	}
	s.SetStepper(opt)
	return nil
}
