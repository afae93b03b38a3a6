package run

import (
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
)

// This file exports the pieces of the in-process run that the networked
// parties (package netrun) build in exactly the same way, so that both
// modes give identical results for the same configuration.

// BuildProtection builds the gradient protection, the optional
// distance-correlation loss and, under label DP, the noisy training labels
// of cfg, as the in-process run does.
func BuildProtection(cfg *Config, train *data.Dataset) (protect.Protector, *protect.DCor, []uint8, error) {
	return buildProtection(cfg, train)
}

// ExpandAttacks resolves "all" in an attack list as the in-process run
// does.
func ExpandAttacks(names []string) []string { return expandAttacks(names) }

// DataOptions returns the data.Options the in-process run loads cfg's
// data with.
func DataOptions(cfg *Config) data.Options { return dataOptions(cfg) }

// LoadData loads the data of the resolved configuration cfg (an image set,
// a table or synthetic rows) as the in-process run does, before its rows
// are put in canonical order.
func LoadData(cfg *Config) (*data.Split, error) { return loadData(cfg) }

// CNNConfig returns the split CNN the in-process run builds for the
// resolved configuration cfg: over images of the resolved ImageSize and
// ImageChannels, the shape the image loaders give. A party without the
// images (the active party) builds its top from it.
func CNNConfig(cfg *Config) model.CNNConfig {
	return cnnConfig(cfg, data.ImageShape{Height: cfg.ImageSize, Width: cfg.ImageSize, Channels: cfg.ImageChannels})
}
