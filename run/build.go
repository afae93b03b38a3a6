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
// authors' experiments. The CNN's input shape is the images' shape.
func buildModels(cfg *Config, x *data.Features) (model.Bottom, model.Top, bool, error) {
	if cfg.Model == "cnn" {
		b, t, err := buildCNN(cfg, x)
		return b, t, false, err
	}
	if x.Image != nil {
		return nil, nil, false, fmt.Errorf("run: --model %s reads tables but the data are %d×%d×%d images; use --model cnn", cfg.Model, x.Image.Height, x.Image.Width, x.Image.Channels)
	}
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

// buildCNN builds the split CNN over images of x's shape.
func buildCNN(cfg *Config, x *data.Features) (model.Bottom, model.Top, error) {
	if x.Image == nil {
		return nil, nil, fmt.Errorf("run: --model cnn reads images but the data are a table of %d columns", x.NumCat+x.NumDense)
	}
	b, t, err := model.NewCNN(cnnConfig(cfg, *x.Image))
	if err != nil {
		return nil, nil, fmt.Errorf("run: %w", err)
	}
	return b, t, nil
}

// cnnConfig is the split CNN of cfg over images of the given shape.
func cnnConfig(cfg *Config, im data.ImageShape) model.CNNConfig {
	return model.CNNConfig{
		Height: im.Height, Width: im.Width, Channels: im.Channels,
		Blocks: cfg.CNNBlocks, Filters: cfg.CNNChannels, Kernel: cfg.CNNKernel, Dense: cfg.CNNDense,
		Cut: cfg.Cut, LR: float32(cfg.LR), Seed: cfg.Seed,
	}
}

// buildProtection builds the gradient protection, the optional
// distance-correlation loss and, under label DP, the noisy training labels.
func buildProtection(cfg *Config, train *data.Dataset) (protect.Protector, *protect.DCor, []uint8, error) {
	p, err := protect.New(cfg.Protect, cfg.protectOptions())
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

// protectOptions gathers the protection's parameters from the config.
func (c *Config) protectOptions() protect.Options {
	return protect.Options{
		IsoT: c.IsoT, IsoRatio: c.IsoRatio, MarvellS: c.MarvellS,
		MarvellErrorBound: c.MarvellErrorBound, MarvellSumKL: c.MarvellSumKL,
	}
}

// checkAttacks returns an error naming the first attack name that is
// neither registered nor an epoch-memory attack.
func checkAttacks(names []string) error {
	for _, n := range expandAttacks(names) {
		if n == attack.MemoryNormName || n == attack.MemoryCosineName {
			continue
		}
		if _, err := attack.New(n); err != nil {
			return err
		}
	}
	return nil
}

// expandAttacks resolves "all" into every registered attack plus the
// epoch-memory attacks.
func expandAttacks(names []string) []string {
	if slices.Contains(names, "all") {
		return append(attack.Names(), attack.MemoryNormName, attack.MemoryCosineName)
	}
	return names
}
