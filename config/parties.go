package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
)

// Party is one passive party of a run with several (key parties): its
// name, the table columns it holds and, optionally, its own defences.
//
// Protect names the gradient protection the active party applies to this
// party's block of the gradient (empty: the run's key protect). Params,
// when set, are this party's parameters of its gradient protection and of
// the layers at its output (mid_passive, fedpass_passive, nopeek): they
// replace the run's parameters of those two kinds for this party. The
// active party's own add-ons (dcor, label_dp, the input layers, cae) are
// the run's.
type Party struct {
	Name    string         `yaml:"name,omitempty"`
	Columns []string       `yaml:"columns,flow"`
	Protect string         `yaml:"protect,omitempty"`
	Params  protect.Params `yaml:"params,flow,omitempty"`
}

// Aggregations of the passive parties' embeddings (key aggregation).
const (
	AggregationConcat = "concat"
	AggregationSum    = "sum"
	// AggregationGated weighs the parties' embeddings (all of one width)
	// with weights the active party learns (GatedTop).
	AggregationGated = "gated"
)

// MultiParty reports whether the configuration has several passive
// parties (key parties).
func (c *Config) MultiParty() bool { return len(c.Parties) > 0 }

// AggregationOr returns key aggregation, concat when it is not set.
func (c *Config) AggregationOr() string {
	if c.Aggregation == "" {
		return AggregationConcat
	}
	return c.Aggregation
}

// PartyName returns passive party k's name (0-based k): its key name, or
// "p1", "p2", … in list order.
func (c *Config) PartyName(k int) string {
	if n := c.Parties[k].Name; n != "" {
		return n
	}
	return fmt.Sprintf("p%d", k+1)
}

// PartyNames returns every passive party's name, in list order.
func (c *Config) PartyNames() []string {
	out := make([]string, len(c.Parties))
	for k := range out {
		out[k] = c.PartyName(k)
	}
	return out
}

// validateParties checks key parties and key aggregation.
func (c *Config) validateParties(bad func(string, ...any)) {
	if c.SynthParties == 1 || c.SynthParties < 0 {
		bad("synth_parties %d: want at least 2 passive parties (or 0: none)", c.SynthParties)
	}
	if c.SynthParties > 0 && (c.SynthRows <= 0 || c.Data != "") {
		bad("synth_parties splits synthetic data: it needs key synth_rows and no key data", keyArg("synth_rows"), keyArg("data"))
	}
	c.validateSynthShared(bad)
	if !c.MultiParty() {
		if c.Cheater != "" {
			bad("key cheater names one of several passive parties (key parties); this run has one passive party", keyArg("cheater"), keyArg("parties"))
		}
		if c.Aggregation != "" && c.Aggregation != AggregationConcat {
			bad("aggregation %s combines several passive parties; the configuration has one (key parties)", c.Aggregation, keyArg("parties"))
		}
		return
	}
	if len(c.Parties) == 1 {
		bad("key parties lists one passive party: a run with one passive party names its columns with key passive_columns", keyArg("parties"), keyArg("passive_columns"))
	}
	if len(c.PassiveColumns) > 0 {
		bad("keys parties and passive_columns both name passive columns: with several passive parties each names its own (parties: columns)", keyArg("parties"))
	}
	if data.IsImageFormat(c.Format) {
		bad("several passive parties (key parties) split a table's columns, not the images of %s", c.Format, keyArg("parties"))
	}
	if a := c.AggregationOr(); a != AggregationConcat && a != AggregationSum && a != AggregationGated {
		bad("unknown aggregation %q (key aggregation): want %s, %s or %s", a, AggregationConcat, AggregationSum, AggregationGated, keyArg("aggregation"))
	}
	owner := map[string]string{}
	for _, n := range c.ActiveColumns {
		owner[n] = "the active party"
	}
	names := map[string]bool{}
	for k, p := range c.Parties {
		name := c.PartyName(k)
		if names[name] {
			bad("two passive parties are named %q (key parties)", name, keyArg("parties"))
		}
		names[name] = true
		if len(p.Columns) == 0 {
			bad("passive party %s has no column (parties: columns)", name)
		}
		for _, col := range p.Columns {
			if o, ok := owner[col]; ok {
				bad("column %q is both passive party %s's and %s's: a vertical split gives each column to one party", col, name, o)
			}
			owner[col] = "passive party " + name
		}
		pc := c.PartyConfig(k)
		if _, err := protect.Build(pc.Protect, pc.Params, pc.Seed); err != nil {
			bad("passive party %s's defences: %v", name, err)
		}
		for key := range p.Params {
			s, ok := protect.ParamOwner(key)
			if !ok || !(s.Role == protect.GradientRole || s.NewPassiveOutput != nil) {
				bad("passive party %s: parameter %s is not one of a gradient protection or of a layer at the passive party's output, the defences set per party", name, key)
			}
		}
		if (p.Protect != "" || p.Params != nil) && c.AggregationOr() == AggregationSum && (p.Protect != c.Protect || gradientParams(p.Params) != gradientParams(c.Params)) {
			bad("passive party %s has a gradient protection of its own, but under aggregation sum every party receives the same gradient: use aggregation concat", name)
		}
	}
	if len(c.FeatureAttacks) > 0 {
		bad("feature attacks (key feature_attacks) with several passive parties are not built", keyArg("feature_attacks"))
	}
	c.validateCheater(bad)
	c.validatePartyDetectors(bad)
	if c.Contribution && c.AggregationOr() == AggregationSum {
		bad("the leave-one-party-out contribution (key contribution) is built for aggregation concat: under sum the active party sees only the sum", keyArg("contribution"))
	}
	if c.Dump != "" {
		bad("dumps (key dump) with several passive parties are not built", keyArg("dump"))
	}
	if c.Hijack != "" || c.HijackStop != 0 {
		bad("a hijacking active party and the passive's watch for it (keys hijack, hijack_stop) with several passive parties are not built", keyArg("hijack"), keyArg("hijack_stop"))
	}
	if c.Staleness != 0 || c.LocalSteps > 1 || c.WireFeedback {
		bad("staleness, local steps and error feedback (keys staleness, local_steps, wire_feedback) with several passive parties are not built", keyArg("staleness"), keyArg("local_steps"), keyArg("wire_feedback"))
	}
}

// gradientParams renders the gradient protections' parameters of p, for
// comparing two parties' settings.
func gradientParams(p protect.Params) string {
	keys := slices.Sorted(maps.Keys(p))
	s := ""
	for _, k := range keys {
		if o, ok := protect.ParamOwner(k); ok && o.Role == protect.GradientRole {
			s += fmt.Sprintf("%s=%g;", k, p[k])
		}
	}
	return s
}

// PartyConfig returns the configuration passive party k (0-based) builds
// its bottom model and the active party builds k's gradient protection
// from: the run's, with the party's protection and parameters (see
// [Party]) and a seed of its own for party k > 0 (party 1 keeps the run's
// seed: its bottom is the one a one-passive run would start from).
func (c *Config) PartyConfig(k int) Config {
	r := *c
	r.Layers = slices.Clone(c.Layers)
	p := c.Parties[k]
	if p.Protect != "" {
		r.Protect = p.Protect
	}
	if p.Params != nil {
		params := protect.Params{}
		for key, v := range c.Params {
			if s, ok := protect.ParamOwner(key); ok && (s.Role == protect.GradientRole || s.NewPassiveOutput != nil) {
				continue
			}
			params[key] = v
		}
		maps.Copy(params, p.Params)
		r.Params = params
	}
	if k > 0 {
		r.Seed = c.Seed + uint64(k)*partySeedStride
	}
	r.Parties, r.PassiveColumns = nil, p.Columns
	return r
}

// partySeedStride separates the passive parties' model seeds.
const partySeedStride = 0x9e3779b97f4a7c15

// PartyFeatures returns each passive party's features of x and the
// active party's: its key active_columns, or the columns no passive
// party names.
func (c *Config) PartyFeatures(x *data.Features) (passive []*data.Features, active *data.Features, err error) {
	var all []string
	for k, p := range c.Parties {
		f, err := data.SelectColumns(x, p.Columns)
		if err != nil {
			return nil, nil, fmt.Errorf("passive party %s's columns (parties: columns): %w", c.PartyName(k), err)
		}
		passive = append(passive, f)
		all = append(all, p.Columns...)
	}
	ac := c.ActiveColumns
	if len(ac) == 0 {
		ac = x.Complement(all)
	}
	if active, err = data.SelectColumns(x, ac); err != nil {
		return nil, nil, Keyed(fmt.Errorf("the active party's columns (key active_columns): %w", err), "active_columns")
	}
	return passive, active, nil
}

// BuildPartyModels builds every passive party's bottom over its features
// px[k] (each from [Config.PartyConfig]) and the active party's top over
// the combined embedding: under concat the top's input is the sum of the
// parties' cut widths, under sum one cut width. ax are the active party's
// own features (its wide part, wdl).
func (c *Config) BuildPartyModels(px []*data.Features, ax *data.Features) ([]model.Bottom, model.Top, bool, error) {
	var bottoms []model.Bottom
	widths := 0
	for k, x := range px {
		pc := c.PartyConfig(k)
		b, err := pc.BuildBottom(x)
		if err != nil {
			return nil, nil, false, fmt.Errorf("passive party %s: %w", c.PartyName(k), err)
		}
		bottoms = append(bottoms, b)
		widths += b.CutDim()
	}
	tc := *c
	tc.Layers = slices.Clone(c.Layers)
	tc.Resolve()
	kind, _ := model.LookupKind(tc.Model)
	if c.AggregationOr() == AggregationConcat && !kind.Images {
		tc.Layers[tc.Cut-1] = widths
	}
	if !kind.Wide {
		ax = nil
	} else if ax.NumCat+ax.NumDense == 0 {
		return nil, nil, false, Keyed(fmt.Errorf("model %s: the passive parties leave the active party's wide part no column (key active_columns)", tc.Model), "active_columns")
	}
	t, wide, err := tc.BuildTop(ax)
	if err != nil {
		return nil, nil, false, err
	}
	if c.AggregationOr() == AggregationGated {
		if t, err = gate(t, bottoms, float32(tc.LR)); err != nil {
			return nil, nil, false, err
		}
	}
	return bottoms, t, wide, nil
}

// resolveSynthParties fills key parties from key synth_parties (see
// [Config.SynthParties]) when no party is given.
func (c *Config) resolveSynthParties() {
	if c.SynthParties < 2 || c.SynthRows <= 0 || c.Data != "" || len(c.Parties) > 0 {
		return
	}
	cols, err := data.SynthPartyColumns(c.SynthParties)
	if err != nil {
		return // Validate says why
	}
	for _, p := range cols[:c.SynthParties] {
		c.Parties = append(c.Parties, Party{Columns: p})
	}
	if len(c.ActiveColumns) == 0 {
		c.ActiveColumns = cols[c.SynthParties]
	}
}

// gate puts the learned aggregation of the bottoms' embeddings in front
// of top (aggregation gated), which needs every party's cut of one width.
func gate(top model.Top, bottoms []model.Bottom, lr float32) (model.Top, error) {
	d := bottoms[0].CutDim()
	for k, b := range bottoms {
		if b.CutDim() != d {
			return nil, Keyed(fmt.Errorf("aggregation %s weighs embeddings of one width: passive party %d's is %d wide, party 1's %d (key aggregation)", AggregationGated, k+1, b.CutDim(), d), "aggregation")
		}
	}
	return NewGatedTop(top, len(bottoms), d, lr)
}
