package netrun

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/run"
)

// partyData is one party's rows: both splits in canonical (ID) order.
type partyData struct {
	split *data.Split
}

// loadParty loads cfg's data file as one party holds it: with labels for
// the active party, without for the passive, restricted to cfg.Columns,
// with the in-process run's options; rows sorted by ID. Duplicate example
// IDs are an error (the parties join on them).
func loadParty(cfg *Config, labels bool) (*partyData, error) {
	if data.IsImageFormat(cfg.Format) {
		return loadImageParty(cfg, labels)
	}
	o := run.DataOptions(&cfg.Config)
	o.NoLabel = !labels
	o.Columns = cfg.Columns
	s, err := data.Load(cfg.Data, o)
	if err != nil {
		return nil, err
	}
	return canonical(cfg, s)
}

// loadImageParty loads cfg's image set (fashion-mnist or isic, cfg
// resolved) with the in-process run's loader and keeps what the party
// holds: the images without labels for the passive party, the labels
// without images for the active party, whose CNN top has no wide part.
//
// The active party thus decodes the images only to drop them (the ISIC
// loader's pixel cache makes a second load cheap): the loaders' selection
// of examples (ISIC's benign subsampling and its exact-size test split,
// Fashion-MNIST's positive-rate subsampling) is computed over the whole
// set's IDs and labels, and reusing it keeps both parties and the
// in-process run on the same examples. In a real deployment the active
// party would hold a label file keyed by image ID instead of the images.
func loadImageParty(cfg *Config, labels bool) (*partyData, error) {
	s, err := run.LoadData(&cfg.Config)
	if err != nil {
		return nil, err
	}
	for _, d := range []*data.Dataset{s.Train, s.Test} {
		if labels {
			d.X = nil
		} else {
			d.Labels = nil
		}
	}
	return canonical(cfg, s)
}

// saveEncoding writes the encoding of the party's training data into its
// run directory and drops it from memory (a vocabulary can be large); image
// data have none.
func (p *partyData) saveEncoding(dir string) error {
	if p.split.Encoding == nil {
		return nil // images: no encoding
	}
	if err := data.SaveEncoding(filepath.Join(dir, run.EncodingFile), p.split.Encoding); err != nil {
		return err
	}
	p.split.Encoding = nil
	return nil
}

// loadPartyWith loads cfg's data file as the party to score it: without
// labels, encoded with enc (the training data's encoding), rows sorted by
// ID.
func loadPartyWith(cfg *Config, enc *data.Encoding) (*partyData, error) {
	o := run.DataOptions(&cfg.Config)
	o.NoLabel = true
	o.Columns = cfg.Columns
	s, err := data.LoadWith(cfg.Data, o, enc)
	if err != nil {
		return nil, err
	}
	return canonical(cfg, s)
}

// canonical sorts both splits by ID and refuses a duplicate ID.
func canonical(cfg *Config, s *data.Split) (*partyData, error) {
	run.SortByID(s.Train)
	run.SortByID(s.Test)
	for _, d := range []*data.Dataset{s.Train, s.Test} {
		for i := 1; i < len(d.IDs); i++ {
			if d.IDs[i] == d.IDs[i-1] {
				return nil, fmt.Errorf("data %s: example ID %d appears more than once; the parties join on unique IDs", cfg.Data, d.IDs[i])
			}
		}
	}
	return &partyData{split: s}, nil
}

// ids returns every example ID the party holds (train and test).
func (p *partyData) ids() []uint64 {
	out := make([]uint64, 0, len(p.split.Train.IDs)+len(p.split.Test.IDs))
	out = append(out, p.split.Train.IDs...)
	return append(out, p.split.Test.IDs...)
}

// restrict keeps the rows whose ID is in the sorted set common.
func (p *partyData) restrict(common []uint64) *data.Split {
	keep := func(d *data.Dataset) *data.Dataset {
		var rows []int
		for i, id := range d.IDs {
			if _, ok := slices.BinarySearch(common, id); ok {
				rows = append(rows, i)
			}
		}
		return run.SelectRows(d, rows)
	}
	return &data.Split{Train: keep(p.split.Train), Test: keep(p.split.Test), Info: p.split.Info}
}

// modelConfig is the model.Config the in-process run builds from cfg.
func modelConfig(cfg *Config) model.Config {
	mc := model.Config{Widths: cfg.Layers, Cut: cfg.Cut, EmbDim: cfg.EmbedDim, L2: float32(cfg.L2),
		LR: float32(cfg.LR), Seed: cfg.Seed}
	if cfg.L2 == 0 {
		mc.L2 = -1 // model.Config reads 0 as "default"; the run's 0 means off
	}
	return mc
}

// newBottom builds the passive party's model over its features (the
// CNN's bottom over its images, as run.Train builds it).
func newBottom(cfg *Config, x *data.Features) (model.Bottom, error) {
	if cfg.Model == "cnn" {
		if x.Image == nil {
			return nil, fmt.Errorf("netrun: --model cnn reads images but the data are a table of %d columns", x.NumCat+x.NumDense)
		}
		mc := run.CNNConfig(&cfg.Config)
		if im := *x.Image; im.Height != mc.Height || im.Width != mc.Width || im.Channels != mc.Channels {
			return nil, fmt.Errorf("netrun: images of %d×%d×%d, the config says %d×%d×%d", im.Height, im.Width, im.Channels, mc.Height, mc.Width, mc.Channels)
		}
		return model.NewCNNBottom(mc)
	}
	return model.NewBottom(modelConfig(cfg), model.SchemaOf(x))
}

// newTop builds the active party's model; Wide&Deep's wide part reads the
// active party's own features (x may be nil for the CNN).
func newTop(cfg *Config, x *data.Features) (model.Top, bool, error) {
	switch cfg.Model {
	case "wdl":
		s := model.SchemaOf(x)
		t, err := model.NewTop(modelConfig(cfg), &s)
		return t, true, err
	case "mlp":
		t, err := model.NewTop(modelConfig(cfg), nil)
		return t, false, err
	case "cnn":
		// The CNN's top reads only the cut embedding: the active party
		// needs no features, only the resolved image shape.
		t, err := model.NewCNNTop(run.CNNConfig(&cfg.Config))
		return t, false, err
	}
	return nil, false, fmt.Errorf("netrun: unknown model %q (want wdl, mlp or cnn)", cfg.Model)
}
