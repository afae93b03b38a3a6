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
	o := run.DataOptions(&cfg.Config)
	o.NoLabel = !labels
	o.Columns = cfg.Columns
	s, err := data.Load(cfg.Data, o)
	if err != nil {
		return nil, err
	}
	return canonical(cfg, s)
}

// saveEncoding writes the encoding of the party's training data into its
// run directory and drops it from memory (a vocabulary can be large).
func (p *partyData) saveEncoding(dir string) error {
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

// newBottom builds the passive party's model over its features.
func newBottom(cfg *Config, x *data.Features) (model.Bottom, error) {
	return model.NewBottom(modelConfig(cfg), model.SchemaOf(x))
}

// newTop builds the active party's model; Wide&Deep's wide part reads the
// active party's own features.
func newTop(cfg *Config, x *data.Features) (model.Top, bool, error) {
	switch cfg.Model {
	case "wdl":
		s := model.SchemaOf(x)
		t, err := model.NewTop(modelConfig(cfg), &s)
		return t, true, err
	case "mlp":
		t, err := model.NewTop(modelConfig(cfg), nil)
		return t, false, err
	}
	return nil, false, fmt.Errorf("netrun: unknown model %q (want wdl or mlp)", cfg.Model)
}
