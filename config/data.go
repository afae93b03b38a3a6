package config

import "github.com/splitguard/splitguard/data"

// LoadData reads the resolved configuration's data, with labels: an image
// set (its reader must be linked in: see data.LoadImages), a table, or
// synthetic Criteo-shaped rows. Rows are in file order
// (data.SortByID puts them in the canonical order).
func (c *Config) LoadData() (*data.Split, error) {
	switch {
	case data.IsImageFormat(c.Format):
		return data.LoadImages(c.Format, c.Data, c.ImageOptions())
	case c.Data == "":
		return data.Generate(c.SynthRows, c.SynthPosRate, c.Seed, c.DataOptions())
	}
	return data.Load(c.Data, c.DataOptions())
}

// ImageOptions maps the configuration's image settings to the image
// loaders' options.
func (c *Config) ImageOptions() data.ImageOptions {
	return data.ImageOptions{
		PositiveClass: c.PositiveClass, PosRate: c.PosRate,
		Size: c.ImageSize, Pad: c.ImagePad, Channels: c.ImageChannels,
		Seed: c.Seed, NegPerPos: c.NegPerPos, TestFrac: c.TestFrac,
	}
}

// DataOptions maps the configuration's table settings to the table
// readers' options.
func (c *Config) DataOptions() data.Options {
	return data.Options{
		Format: c.Format, LabelCol: c.Label, Positive: c.Positive, IDCol: c.IDCol,
		Sample: c.Sample, TestFrac: c.TestFrac, Seed: c.Seed,
		HashBuckets: c.HashBuckets, SkipBadRows: c.SkipBadRows,
	}
}
