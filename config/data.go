package config

import (
	"fmt"
	"math"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/data"
)

// Values is a list of strings in a config file that may also be written as
// one scalar ("positive: yes" is the list [yes]).
type Values []string

// UnmarshalYAML reads a sequence of scalars or one scalar.
func (v *Values) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*v = Values{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*v = list
	return nil
}

// LoadData reads the resolved configuration's data, with labels: an image
// set (its reader must be linked in: see data.LoadImages), a table, or
// synthetic Criteo-shaped rows. Rows are in file order
// (data.SortByID puts them in the canonical order).
func (c *Config) LoadData() (*data.Split, error) {
	switch {
	case data.IsImageFormat(c.Format):
		return data.LoadImages(c.Format, c.Data, c.ImageOptions())
	case c.Data == "":
		return data.GenerateTied(c.SynthRows, c.SynthPosRate, c.SynthShared, c.SynthSharedLabel, c.DataSeed(), c.DataOptions())
	}
	if tf, ok := data.LookupTableFormat(c.Format); ok && tf.LabelCol == "" && c.Label == "" {
		return nil, Keyed(fmt.Errorf("format %s: no label column named (key label); the passive party of a two-party run loads its table without labels", c.Format), "label")
	}
	return data.Load(c.Data, c.DataOptions())
}

// DataSeed is the seed of the data: the sampling, the test split and
// synthetic rows. It is SplitSeed when set, else Seed.
func (c *Config) DataSeed() uint64 {
	if c.SplitSeed != 0 {
		return c.SplitSeed
	}
	return c.Seed
}

// ImageOptions maps the configuration's image settings to the image
// loaders' options.
func (c *Config) ImageOptions() data.ImageOptions {
	return data.ImageOptions{
		PositiveClass: c.PositiveClass, PosRate: c.PosRate,
		Size: c.ImageSize, Pad: c.ImagePad, Channels: c.ImageChannels,
		Seed: c.DataSeed(), NegPerPos: c.NegPerPos, TestFrac: c.TestFrac,
	}
}

// DataOptions maps the configuration's table settings to the table
// readers' options.
func (c *Config) DataOptions() data.Options {
	return data.Options{
		Format: c.Format, LabelCol: c.Label, Positive: c.Positive, Negative: c.Negative, IDCol: c.IDCol,
		Dense: c.Numeric, Categorical: c.Categorical, Ignore: c.Ignore,
		Sample: c.Sample, TestFrac: c.TestFrac, Seed: c.DataSeed(),
		HashBuckets: c.HashBuckets, SkipBadRows: c.SkipBadRows,
	}
}

// MinPositivesPerBatch is the fewest positives a training batch should
// hold on average. A batch's leak AUC needs a positive and a negative: at
// two positives on average about e^-2 ≈ 14% of batches have none and are
// skipped; below it the skipped share climbs fast (27% at 1.3, 37% at
// one) and the defences and attacks that act per batch (Marvell's noise,
// max_norm's scaling, the attacks' ranking within a batch) work on the
// one positive a batch has, so their figures mean little.
const MinPositivesPerBatch = 2

// PositivesWarning returns a warning (about key batch) when batches of
// batch rows drawn from training rows with positive rate posRate hold
// fewer than MinPositivesPerBatch positives on average, or the zero
// Warning when they hold enough.
func PositivesWarning(batch int, posRate float64) Warning {
	if batch <= 0 || posRate <= 0 || posRate >= 1 || float64(batch)*posRate >= MinPositivesPerBatch {
		return Warning{}
	}
	none := math.Pow(1-posRate, float64(batch))
	return configkey.Warn(fmt.Sprintf("batches of %d rows hold %.1f positives on average (%.2f%% of the training rows are positive), below %d: "+
		"%.0f%% of batches have none (their leak AUC is undefined and skipped) and per-batch defences and attacks work on one or two positives; "+
		"a batch of at least %d rows (key batch) holds %d on average",
		batch, float64(batch)*posRate, 100*posRate, MinPositivesPerBatch, 100*none, int(math.Ceil(MinPositivesPerBatch/posRate)), MinPositivesPerBatch), "batch")
}

// BatchWarning returns a warning (about key batch) when the batch size
// leaves too few training steps to learn anything (a batch larger than
// the training split gives one step per epoch), or the zero Warning when
// the batch fits.
func BatchWarning(batch, trainRows, epochs int) Warning {
	if trainRows <= 0 || batch <= trainRows {
		return Warning{}
	}
	return configkey.Warn(fmt.Sprintf("batch size %d (key batch) exceeds the %d training rows: every epoch is a single step of all of them, "+
		"%d step(s) in all, too few to learn from, and the leak figures are of that one batch; choose a batch of at most %d",
		batch, trainRows, max(epochs, 1), max(trainRows/8, 2)), "batch")
}
