package config

import (
	"strings"
	"testing"

	"github.com/splitguard/splitguard/integrity"
	"github.com/splitguard/splitguard/protect"
)

// TestPartiesValidate checks the refusals of key parties, each naming
// what is wrong.
func TestPartiesValidate(t *testing.T) {
	two := func() []Party {
		return []Party{{Name: "a", Columns: []string{"C1"}}, {Name: "b", Columns: []string{"C2"}}}
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"ok", func(c *Config) {}, ""},
		{"one", func(c *Config) { c.Parties = c.Parties[:1] }, "lists one passive party"},
		{"overlap", func(c *Config) { c.Parties[1].Columns = []string{"C1"} }, `column "C1" is both passive party b's and passive party a's`},
		{"active overlap", func(c *Config) { c.ActiveColumns = []string{"C2"} }, `column "C2" is both passive party b's and the active party's`},
		{"no columns", func(c *Config) { c.Parties[0].Columns = nil }, "passive party a has no column"},
		{"same name", func(c *Config) { c.Parties[1].Name = "a" }, `two passive parties are named "a"`},
		{"aggregation", func(c *Config) { c.Aggregation = "mean" }, `unknown aggregation "mean"`},
		{"passive_columns", func(c *Config) { c.PassiveColumns = []string{"C3"} }, "keys parties and passive_columns"},
		{"protection", func(c *Config) { c.Parties[0].Protect = "nope" }, "passive party a's defences"},
		{"add-on per party", func(c *Config) { c.Parties[0].Params = protect.Params{"dcor_alpha": 1} }, "parameter dcor_alpha is not one of"},
		{"sum per party", func(c *Config) { c.Aggregation, c.Parties[0].Protect = "sum", "max_norm" }, "under aggregation sum every party receives the same gradient"},
		{"contribution sum", func(c *Config) { c.Aggregation, c.Contribution, c.ValFrac = "sum", true, 0.1 }, "leave-one-party-out contribution"},
		{"feature attacks", func(c *Config) { c.FeatureAttacks = []string{"inverse_linear"} }, "feature attacks"},
		{"vflip", func(c *Config) { c.Detectors = []string{"vflip"} }, ""},
		{"one-party detector", func(c *Config) { c.Detectors = []string{"vflip", "autoencoder"} }, "detector autoencoder scores one passive party's embedding"},
		{"vflip sum", func(c *Config) { c.Detectors, c.Aggregation = []string{"vflip"}, "sum" }, "only aggregation concat keeps apart"},
		{"vflip_rows threshold", func(c *Config) { c.Detectors, c.VflipRowsThreshold = []string{"vflip_rows"}, 3 }, ""},
		{"vflip_rows threshold negative", func(c *Config) { c.Detectors, c.VflipRowsThreshold = []string{"vflip_rows"}, -1 }, "vflip_rows threshold -1, want a z-score > 0 (key vflip_rows_threshold)"},
		{"vflip_rows threshold alone", func(c *Config) { c.Detectors, c.VflipRowsThreshold = []string{"vflip"}, 3 }, "no row-purifying detector on (key detectors; row purifiers: [vflip_rows])"},
		{"free ride unnamed", func(c *Config) { c.FreeRide = "noise" }, "needs the cheating party's name (key cheater): one of [a b]"},
		{"free ride", func(c *Config) { c.FreeRide, c.Cheater = "noise", "b" }, ""},
		{"backdoor", func(c *Config) { c.Backdoor, c.Cheater = "gradient_replacement", "a" }, ""},
		{"backdoor sum", func(c *Config) { c.Backdoor, c.Cheater, c.Aggregation = "gradient_replacement", "a", "sum" }, "built for aggregation concat"},
		{"unknown cheater", func(c *Config) { c.FreeRide, c.Cheater = "noise", "p2" }, `cheater "p2" is not a passive party: want one of [a b]`},
		{"cheater without mode", func(c *Config) { c.Cheater = "a" }, "no cheating mode is set"},
		{"synth_shared", func(c *Config) { c.SynthShared = 1.5 }, "synth_shared 1.5: want a share in [0, 1]"},
		{"synth_shared ok", func(c *Config) { c.SynthShared = 0.5 }, ""},
		{"synth_shared_label range", func(c *Config) { c.SynthShared, c.SynthSharedLabel = 0.5, 1 }, "the label's correlation 1 with the shared factor (key synth_shared_label): want a correlation in [0, 1)"},
		{"synth_shared_label alone", func(c *Config) { c.SynthSharedLabel = 0.5 }, "a label tied to the shared factor (key synth_shared_label) needs that factor: key synth_shared > 0"},
		{"synth_shared_label ok", func(c *Config) { c.SynthShared, c.SynthSharedLabel = 0.5, 0.6 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.SynthRows, c.Out = 1000, t.TempDir()
			c.Parties = two()
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPartyConfig checks each party's configuration: its protection and
// parameters replace the run's of those kinds only, party 1 keeps the
// run's seed and the others get seeds of their own.
func TestPartyConfig(t *testing.T) {
	c := Default()
	c.Protect, c.Params = "marvell", protect.Params{"marvell_s": 4, "dcor_alpha": 0.5}
	c.Parties = []Party{{Columns: []string{"C1"}}, {Columns: []string{"C2"}, Protect: "max_norm", Params: protect.Params{}}}
	p1, p2 := c.PartyConfig(0), c.PartyConfig(1)
	if p1.Protect != "marvell" || p1.Params["marvell_s"] != 4 || p1.Seed != c.Seed {
		t.Errorf("party 1: protect %s params %v seed %d, want the run's", p1.Protect, p1.Params, p1.Seed)
	}
	if p2.Protect != "max_norm" || p2.Params.Has("marvell_s") || p2.Params["dcor_alpha"] != 0.5 || p2.Seed == c.Seed {
		t.Errorf("party 2: protect %s params %v seed %d", p2.Protect, p2.Params, p2.Seed)
	}
	if names := c.PartyNames(); names[0] != "p1" || names[1] != "p2" {
		t.Errorf("default names %v", names)
	}
}

// TestCheaterNeedsSeveralParties: key cheater in a run of one passive
// party is refused, naming the key.
func TestCheaterNeedsSeveralParties(t *testing.T) {
	c := Default()
	c.SynthRows, c.Out = 1000, t.TempDir()
	c.FreeRide, c.Cheater = "noise", "p1"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "key cheater names one of several passive parties") {
		t.Errorf("cheater with one passive party: %v", err)
	}
}

// TestVflipRowsThresholdReachesGuard: key vflip_rows_threshold sets the
// purifier's threshold; unset, it is integrity.VflipRowsThreshold.
func TestVflipRowsThresholdReachesGuard(t *testing.T) {
	for _, tc := range []struct{ key, want float64 }{{0, integrity.VflipRowsThreshold}, {3.5, 3.5}} {
		c := Default()
		c.Detectors, c.VflipRowsThreshold = []string{"vflip_rows"}, tc.key
		g, err := c.NewGuard()
		if err != nil {
			t.Fatal(err)
		}
		if got := g.RowPurifier().RowThreshold(); got != tc.want {
			t.Errorf("key %g: threshold %g, want %g", tc.key, got, tc.want)
		}
	}
}
