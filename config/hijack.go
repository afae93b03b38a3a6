package config

import (
	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/tensor"
)

// validateHijack checks the passive party's hijacking watch.
func (c *Config) validateHijack(bad func(string, ...any)) {
	if c.HijackStop < 0 || c.HijackStop >= 0.5 || c.HijackStop != c.HijackStop {
		bad("hijacking threshold %g, want one in [0, 0.5) (key hijack_stop; 0: off)", c.HijackStop, keyArg("hijack_stop"))
	}
}

// NewHijackCheck returns the passive party's check of every training
// gradient it receives (integrity.HijackWatch at key hijack_stop), nil
// when the watch is off.
func (c *Config) NewHijackCheck() (func(int64, *tensor.Matrix) error, error) {
	if c.HijackStop == 0 {
		return nil, nil
	}
	w, err := integrity.NewHijackWatch(c.HijackStop)
	if err != nil {
		return nil, err
	}
	return w.Batch, nil
}
