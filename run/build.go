package run

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
)

// buildModels builds the split model cfg names over the training features.
// In the simulation both parties see the same columns: the passive's deep
// part and the active's wide part read the same features, as in the
// authors' experiments.
func buildModels(cfg *Config, x *data.Features) (model.Bottom, model.Top, bool, error) {
	mc := model.Config{Widths: cfg.Layers, Cut: cfg.Cut, EmbDim: cfg.EmbedDim, L2: float32(cfg.L2),
		LR: float32(cfg.LR), Seed: cfg.Seed}
	if cfg.L2 == 0 {
		mc.L2 = -1 // model.Config reads 0 as "default"; the run's 0 means off
	}
	schema := model.SchemaOf(x)
	switch cfg.Model {
	case "wdl":
		b, t, err := model.NewWideDeep(mc, schema, schema)
		return b, t, true, err
	case "mlp":
		b, t, err := model.NewMLP(mc, schema)
		return b, t, false, err
	}
	return nil, nil, false, fmt.Errorf("run: unknown model %q (want wdl or mlp)", cfg.Model)
}

// buildProtection builds the gradient protection, the optional
// distance-correlation loss and, under label DP, the noisy training labels.
func buildProtection(cfg *Config, train *data.Dataset) (protect.Protector, *protect.DCor, []uint8, error) {
	p, err := protect.New(cfg.Protect, protect.Options{
		IsoT: cfg.IsoT, IsoRatio: cfg.IsoRatio, MarvellS: cfg.MarvellS,
		MarvellErrorBound: cfg.MarvellErrorBound, MarvellSumKL: cfg.MarvellSumKL,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	var dcor *protect.DCor
	if cfg.DCorAlpha > 0 {
		if dcor, err = protect.NewDCor(cfg.DCorAlpha); err != nil {
			return nil, nil, nil, err
		}
	}
	var noisy []uint8
	if cfg.LabelDPEps > 0 {
		dp, err := protect.NewLabelDP(cfg.LabelDPEps, cfg.Seed)
		if err != nil {
			return nil, nil, nil, err
		}
		noisy = dp.Apply(train.IDs, train.Labels, nil)
	}
	return p, dcor, noisy, nil
}

// expandAttacks resolves "all" into every registered attack plus the
// epoch-memory attacks.
func expandAttacks(names []string) []string {
	if slices.Contains(names, "all") {
		return append(attack.Names(), attack.MemoryNormName, attack.MemoryCosineName)
	}
	return names
}
