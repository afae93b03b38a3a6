package netrun

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/rundir"
)

// partyData is one party's rows: both splits in canonical (ID) order.
type partyData struct {
	split *data.Split
}

// loadParty loads cfg's data file as one party holds it: with labels for
// the active party, without for the passive, restricted to its columns
// (key columns or the vertical split: Config.partyColumns),
// with the in-process run's options; rows sorted by ID. Duplicate example
// IDs are an error (the parties join on them).
func loadParty(cfg *Config, labels bool) (*partyData, error) {
	if data.IsImageFormat(cfg.Format) {
		return loadImageParty(cfg, labels)
	}
	o := cfg.DataOptions()
	o.NoLabel = !labels
	o.Columns, o.Ignore = cfg.loadColumns, append(slices.Clip(o.Ignore), cfg.loadIgnore...)
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
	s, err := cfg.LoadData()
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
// data and a table of no feature column have none.
func (p *partyData) saveEncoding(dir string) error {
	if p.split.Encoding == nil || len(p.split.Encoding.Columns) == 0 {
		p.split.Encoding = nil
		return nil // images, or an active party that a vertical split leaves no column: no encoding
	}
	if err := data.SaveEncoding(filepath.Join(dir, rundir.EncodingFile), p.split.Encoding); err != nil {
		return err
	}
	p.split.Encoding = nil
	return nil
}

// loadPartyWith loads cfg's data file as the party to score it: without
// labels, encoded with enc (the training data's encoding), rows sorted by
// ID.
func loadPartyWith(cfg *Config, enc *data.Encoding) (*partyData, error) {
	o := cfg.DataOptions()
	o.NoLabel = true
	o.Columns, o.Ignore = cfg.loadColumns, append(slices.Clip(o.Ignore), cfg.loadIgnore...)
	s, err := data.LoadWith(cfg.Data, o, enc)
	if err != nil {
		return nil, err
	}
	return canonical(cfg, s)
}

// canonical sorts both splits by ID and refuses a duplicate ID.
func canonical(cfg *Config, s *data.Split) (*partyData, error) {
	s.SortByID()
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
		return data.SelectRows(d, rows)
	}
	return &data.Split{Train: keep(p.split.Train), Test: keep(p.split.Test), Info: p.split.Info}
}

// newBottom builds the passive party's model over its features.
func newBottom(cfg *Config, x *data.Features) (model.Bottom, error) {
	bc := cfg.Config
	if k := cfg.partyIndex(); cfg.MultiParty() && k >= 0 {
		bc = cfg.PartyConfig(k) // party k's seed and passive-side defences
	}
	b, err := bc.BuildBottom(x)
	if err != nil {
		return nil, fmt.Errorf("passive: %w", err)
	}
	return b, nil
}
