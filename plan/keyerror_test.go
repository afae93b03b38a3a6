package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
)

// TestCheckRefusesKeys: each refused option is a config.KeyError of the
// key its text names.
func TestCheckRefusesKeys(t *testing.T) {
	for _, tc := range []struct {
		key   string
		spoil func(*Options)
		also  []string // further keys the refusal names
	}{
		{"out", func(o *Options) { o.Out = "" }, nil},
		{"max_leak", func(o *Options) { o.Threat.MaxLeak = 0.7 }, nil},
		{"min_tdcs", func(o *Options) { o.Threat.MinTDCS = 1.5 }, nil},
		{"max_leak", func(o *Options) { o.Threat.MaxLeak = 0 }, []string{"min_tdcs"}},
		{"budget", func(o *Options) { o.Budget = -time.Second }, nil},
		{"steps", func(o *Options) { o.MaxSteps = -1 }, nil},
		{"grid", func(o *Options) { o.Grid = -1 }, nil},
	} {
		o := Options{Out: t.TempDir(), Threat: Threat{MaxLeak: 0.1}, Budget: time.Hour}
		o.Base = config.Default()
		o.Base.ValFrac = 0.2
		tc.spoil(&o)
		err := o.check()
		if err == nil {
			t.Errorf("%s: no error", tc.key)
			continue
		}
		if got := config.KeysOf(err); !slices.Equal(got, append([]string{tc.key}, tc.also...)) {
			t.Errorf("%s: keys %v of %q", tc.key, got, err)
		}
	}
}
