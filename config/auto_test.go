package config

import (
	"slices"
	"strings"
	"testing"
)

// TestResolveForData checks the rule of auto.go on hand-computed cases.
func TestResolveForData(t *testing.T) {
	for _, tc := range []struct {
		name                                string
		n                                   int
		edit                                func(*Config)
		batch, epochs, evalEvery, earlyStop int
		lr                                  float64
		auto                                []string
	}{
		// 500/50 = 10 → the floor 32; ⌈500/32⌉ = 16 steps an epoch;
		// ⌈4000/16⌉ = 250 epochs → capped at 100.
		// The wide part starts from the baseline (AutoWideStart), so the
		// rate is AutoSmallLR, not AutoTinyLR.
		{"tiny", 500, nil, 32, 100, 16, 10, 1e-3, []string{"batch", "epochs", "wide_start", "lr", "wide_dense", "eval_every", "early_stop", "select", "select_margin"}},
		{"tiny without the baseline: the tiny rate", 500, func(c *Config) { c.Baseline = false }, 32, 100, 16, 10, 1e-2, nil},
		{"tiny, no wide part: the tiny rate", 500, func(c *Config) { c.Model = "mlp" }, 32, 100, 16, 10, 1e-2, nil},
		{"tiny, two processes: the tiny rate", 500, func(c *Config) { c.TwoProcess = true }, 32, 100, 16, 10, 1e-2, nil},
		{"tiny, random start given: the tiny rate", 500, func(c *Config) { c.WideStart = WideStartRandom }, 32, 100, 16, 10, 1e-2, nil},
		// 8000/50 = 160 → 128; ⌈8000/128⌉ = 63 steps; ⌈4000/63⌉ = 64 epochs.
		{"ten thousand", 8000, nil, 128, 64, 63, 10, 1e-3, nil},
		// 60000/50 = 1200 → 1024; 59 steps; ⌈4000/59⌉ = 68 epochs.
		{"sixty thousand", 60000, nil, 1024, 68, 59, 10, 1e-3, nil},
		// 4M rows: 3907 steps an epoch → 2 epochs (⌈4000/3907⌉); the authors' lr;
		// four evaluations an epoch, ⌈3907/4⌉ = 977 steps apart; ⌈1000/977⌉ = 2
		// evaluations of patience → the floor 4.
		{"criteo scale", 4_000_000, nil, 1024, 2, 977, 4, 1e-4, nil},
		// 810,000 rows: 792 steps an epoch; ⌈4000/792⌉ = 6 epochs; ⌈792/4⌉ = 198
		// steps between evaluations; ⌈1000/198⌉ = 6 evaluations of patience.
		{"a million rows", 810_000, nil, 1024, 6, 198, 6, 1e-3, nil},
		// 409,600 rows: exactly 400 steps an epoch, 100 apart either way.
		{"four hundred steps an epoch", 409_600, nil, 1024, 10, 100, 10, 1e-3, nil},
		// 409,601 rows: 401 steps → ⌈401/4⌉ = 101; ⌈1000/101⌉ = 10.
		{"just over four hundred steps", 409_601, nil, 1024, 10, 101, 10, 1e-3, nil},
		// 500,000 rows: 489 steps → 123 apart; ⌈1000/123⌉ = 9.
		{"half a million", 500_000, nil, 1024, 9, 123, 9, 1e-3, nil},
		{"explicit values win", 500, func(c *Config) {
			c.Batch, c.Epochs, c.LR, c.EvalEvery, c.EarlyStop, c.Select, c.WideDense, c.WideStart, c.SelectMargin = 64, 3, 0.01, 7, 2, SelectLast, WideDenseMinMax, WideStartRandom, SelectMarginOff
		},
			64, 3, 7, 2, 0.01, []string{}},
		// ⌈500/64⌉ = 8 steps: evaluations every 8, ⌈4000/8⌉ = 500 → 100 epochs.
		{"batch given", 500, func(c *Config) { c.Batch = 64 }, 64, 100, 8, 10, 1e-3, []string{"epochs", "wide_start", "lr", "wide_dense", "eval_every", "early_stop", "select", "select_margin"}},
		{"no validation: no early stop", 500, func(c *Config) { c.ValFrac = 0 }, 32, 100, 16, 0, 1e-3, nil},
		{"no evaluations: no early stop", 500, func(c *Config) { c.EvalEvery = 0 }, 32, 100, 0, 0, 1e-3, nil},
		// 2000/50 = 40 → 32; 63 steps an epoch; 64 epochs; the first size at 1e-3.
		{"two thousand", 2000, nil, 32, 64, 63, 10, 1e-3, nil},
		{"just under two thousand", 1999, nil, 32, 64, 63, 10, 1e-3, nil},
		{"just under two thousand, no baseline", 1999, func(c *Config) { c.Baseline = false }, 32, 64, 63, 10, 1e-2, nil},
		{"images keep fixed defaults", 50000, func(c *Config) { c.Format, c.Model, c.Data = "isic", "cnn", "d" }, 1024, 1, 100, 0, 1e-5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			if tc.edit != nil {
				tc.edit(&c)
			}
			c.ResolveForData(tc.n)
			if c.Batch != tc.batch || c.Epochs != tc.epochs || c.EvalEvery != tc.evalEvery || c.EarlyStop != tc.earlyStop || c.LR != tc.lr {
				t.Fatalf("batch %d epochs %d eval_every %d early_stop %d lr %g; want %d %d %d %d %g",
					c.Batch, c.Epochs, c.EvalEvery, c.EarlyStop, c.LR, tc.batch, tc.epochs, tc.evalEvery, tc.earlyStop, tc.lr)
			}
			if tc.auto != nil && !slices.Equal(c.Auto, tc.auto) {
				t.Errorf("auto %v, want %v", c.Auto, tc.auto)
			}
			if c.AutoRows != tc.n {
				t.Errorf("auto rows %d, want %d", c.AutoRows, tc.n)
			}
			again := c
			again.ResolveForData(tc.n)
			if again.Batch != c.Batch || again.Epochs != c.Epochs || again.LR != c.LR {
				t.Errorf("not idempotent: %+v then %+v", c, again)
			}
			if err := c.Validate(); err != nil && !strings.Contains(err.Error(), "output directory") && !strings.Contains(err.Error(), "no data") {
				t.Errorf("resolved config invalid: %v", err)
			}
		})
	}
}

func TestSelectionKeysValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"best without validation", func(c *Config) { c.ValFrac, c.Select = 0, SelectBest }, "key val_frac"},
		{"early stop without validation", func(c *Config) { c.ValFrac, c.EarlyStop = 0, 3 }, "key early_stop"},
		{"early stop without evaluations", func(c *Config) { c.EvalEvery, c.EarlyStop = 0, 3 }, "key eval_every"},
		{"unknown selection", func(c *Config) { c.Select = "first" }, "key select"},
		{"validation fraction", func(c *Config) { c.ValFrac = 1 }, "key val_frac"},
		{"negative baseline rows", func(c *Config) { c.BaselineRows = -1 }, "baseline rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.SynthRows, c.Out = 100, "x"
			if err := c.Validate(); err != nil {
				t.Fatalf("the default is invalid: %v", err)
			}
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestAutoNote(t *testing.T) {
	c := Default()
	c.Batch = 64
	c.ResolveForData(500)
	want := `chosen from the 500 training rows (docs/CLI.md, "Defaults that follow the data"): epochs 100, wide_start baseline, lr 0.001, wide_dense standardised, eval_every 8, early_stop 10, select best, select_margin se`
	if got := c.AutoNote(); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	c.Auto = []string{}
	if got := c.AutoNote(); got != "every training setting was given" {
		t.Errorf("note %q", got)
	}
}
