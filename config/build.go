package config

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
)

// ModelConfig is the Wide&Deep/MLP model.Config of c.
func (c *Config) ModelConfig() model.Config {
	mc := model.Config{Widths: c.Layers, Cut: c.Cut, EmbDim: c.EmbedDim, L2: float32(c.L2),
		LR: float32(c.LR), Seed: c.Seed, WideStandardise: c.WideDense == WideDenseStandardised}
	if c.L2 == 0 {
		mc.L2 = -1 // model.Config reads 0 as "default"; the run's 0 means off
	}
	return mc
}

// CNNConfig is the split CNN of the resolved configuration c, over images
// of its ImageSize and ImageChannels (the shape the image loaders give).
// A party without the images (the active party) builds its top from it.
func (c *Config) CNNConfig() model.CNNConfig {
	return model.CNNConfig{
		Height: c.ImageSize, Width: c.ImageSize, Channels: c.ImageChannels,
		Blocks: c.CNNBlocks, Filters: c.CNNChannels, Kernel: c.CNNKernel, Dense: c.CNNDense,
		Cut: c.Cut, LR: float32(c.LR), Seed: c.Seed,
	}
}

// CutDim is the width d of the cut layer of the configuration once
// resolved: the cut layer's width for wdl/mlp, the flattened output of
// block Cut for the CNN. It is 0 when the configuration names no valid
// cut (Validate says why).
func (c *Config) CutDim() int {
	r := *c
	r.Layers = slices.Clone(c.Layers)
	r.Resolve()
	k, ok := model.LookupKind(r.Model)
	if !ok {
		return 0
	}
	return k.CutDim(r.modelSettings())
}

// modelSettings are the settings every model kind reads.
func (c *Config) modelSettings() model.Settings {
	return model.Settings{Table: c.ModelConfig(), CNN: c.CNNConfig()}
}

// modelKind returns the configuration's model kind from model's registry.
func (c *Config) modelKind() (model.Kind, error) {
	k, ok := model.LookupKind(c.Model)
	if !ok {
		return model.Kind{}, fmt.Errorf("unknown model %q (want %s)", c.Model, model.OrList(model.Kinds()))
	}
	return k, nil
}

// BuildBottom builds the passive party's model over its features x: the
// deep part for wdl/mlp, the CNN's blocks over images of x's shape.
// A passive-side defence (MID or FedPass at the passive party's output)
// wraps it in an [OutputBottom].
func (c *Config) BuildBottom(x *data.Features) (model.Bottom, error) {
	k, err := c.modelKind()
	if err != nil {
		return nil, err
	}
	b, err := k.NewBottom(c.modelSettings(), x)
	if err != nil {
		return nil, err
	}
	if err := c.setPassiveOptimizer(b); err != nil {
		return nil, err
	}
	dense := 0
	if x != nil {
		dense = x.NumDense
	}
	return c.withPassiveOutput(b, dense)
}

// BuildTop builds the active party's model. For Wide&Deep the wide part
// reads the active party's own features x; the MLP and the CNN read only
// the cut embedding (x may be nil). wide reports whether the top reads x.
func (c *Config) BuildTop(x *data.Features) (top model.Top, wide bool, err error) {
	top, wide, err = c.buildTop(x)
	if err != nil {
		return nil, false, err
	}
	top, err = c.withInputLayer(top)
	return top, wide, err
}

func (c *Config) buildTop(x *data.Features) (top model.Top, wide bool, err error) {
	k, err := c.modelKind()
	if err != nil {
		return nil, false, err
	}
	if !k.Wide {
		x = nil
	}
	t, err := k.NewTop(c.modelSettings(), x)
	return t, k.Wide, err
}

// BuildModels builds both halves of the split model over the training
// features x, as the in-process run does: without a vertical split
// (keys passive_columns, active_columns) the passive's deep part and the
// active's wide part read the same features, as in the authors'
// experiments; with one, each reads its party's columns
// ([Config.SplitFeatures]).
func (c *Config) BuildModels(x *data.Features) (model.Bottom, model.Top, bool, error) {
	px, ax, err := c.SplitFeatures(x)
	if err != nil {
		return nil, nil, false, err
	}
	return c.BuildSplitModels(px, ax)
}

// BuildSplitModels builds the passive party's bottom over its features
// px and the active party's top, whose wide part (wdl) reads the active
// party's features ax.
func (c *Config) BuildSplitModels(px, ax *data.Features) (model.Bottom, model.Top, bool, error) {
	b, err := c.BuildBottom(px)
	if err != nil {
		return nil, nil, false, err
	}
	k, err := c.modelKind()
	if err != nil {
		return nil, nil, false, err
	}
	if !k.Wide {
		ax = nil
	} else if ax != nil && ax.Image == nil && ax.NumCat+ax.NumDense == 0 {
		return nil, nil, false, Keyed(fmt.Errorf("model %s: the vertical split leaves the active party's wide part no column (key active_columns); model %s has no wide part",
			c.Model, model.OrList(model.KindsWhere(func(k model.Kind) bool { return !k.Wide && !k.Images }))), "active_columns")
	}
	t, wide, err := c.BuildTop(ax)
	if err != nil {
		return nil, nil, false, err
	}
	return b, t, wide, nil
}

// Defences are a run's defences, built from protect's registry: the
// gradient protection, the add-on loss terms and, under label noise, the
// labels the loss uses.
type Defences struct {
	*protect.Set
	// TrainLabels replace the training labels in the loss (label DP);
	// nil without label noise.
	TrainLabels []uint8
	// TrainTargets are the soft targets of the binary cross-entropy, one
	// per training row, under a label codec (CAE: the encoded labels);
	// nil without one.
	TrainTargets []float32
}

// BuildDefences builds the configuration's defences for the training
// split train.
func (c *Config) BuildDefences(train *data.Dataset) (*Defences, error) {
	set, err := protect.Build(c.Protect, c.Params, c.Seed)
	if err != nil {
		return nil, err
	}
	d := &Defences{Set: set}
	if set.Labels != nil {
		d.TrainLabels = set.Labels.Apply(train.IDs, train.Labels, nil)
	}
	codec, err := protect.BuildCodec(c.Params, c.Seed)
	if err != nil {
		return nil, err
	}
	if codec != nil {
		src := train.Labels
		if d.TrainLabels != nil {
			src = d.TrainLabels
		}
		d.TrainTargets = make([]float32, len(src))
		for i, y := range src {
			d.TrainTargets[i] = codec.Encode(y)
		}
	}
	return d, nil
}

// PassiveDefences lists the parameters of the passive-side defences the
// configuration sets, as sorted "key=value" strings: what the two parties
// of a networked run must agree on beyond the model (the passive applies
// them, the active records them).
func (c *Config) PassiveDefences() []string { return protect.PassiveSettings(c.Params) }

// Legend names the configuration's defences for tables and figures.
func (c *Config) Legend() protect.Legend { return protect.Describe(c.Protect, c.Params) }

// AttackNames resolves "all" in the attack list into every registered
// attack.
func (c *Config) AttackNames() []string { return ExpandAttacks(c.Attacks) }

// ExpandAttacks resolves "all" in an attack list into every registered
// attack that is not expensive (attack.Needs.Expensive), plus any named
// beside "all": attack.Expand, the one expansion every mode reads.
func ExpandAttacks(names []string) []string { return attack.Expand(names) }

// NewAuditor returns the auditor of the configuration's attacks, with
// their tuned attackers when key tuned_known is set, the expensive ones
// sampled every expensive_every batches.
func (c *Config) NewAuditor() (*audit.Auditor, error) {
	a, err := audit.New(c.AttackNames(), c.PositivesMinority, c.Seed)
	if err == nil {
		err = a.SampleExpensive(c.ExpensiveEvery)
	}
	if err != nil || c.TunedKnown == 0 {
		return a, err
	}
	if err := a.Tune(c.TunedKnown, c.TunedBudgetOr()); err != nil {
		return nil, err
	}
	return a, nil
}

// checkAttacks returns an error naming the first attack name that is not
// registered.
func checkAttacks(names []string) error {
	for _, n := range ExpandAttacks(names) {
		if _, err := attack.Describe(n); err != nil {
			return err
		}
	}
	return nil
}
