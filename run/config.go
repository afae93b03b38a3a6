// Package run is the in-process simulation of split learning: it loads the
// data, builds both parties, connects them through transport/inproc, audits
// every batch for label leakage (it alone sees both the labels and what the
// passive party received) and writes the run directory.
package run

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is everything a training run needs. Its YAML keys mirror the
// command-line flags of `splitguard train` (a flag named --test-frac is the
// key test_frac).
type Config struct {
	// Data
	Data        string  `yaml:"data"`
	Format      string  `yaml:"format"`
	Label       string  `yaml:"label,omitempty"`
	Positive    string  `yaml:"positive,omitempty"`
	IDCol       string  `yaml:"id_col,omitempty"`
	Sample      float64 `yaml:"sample"`
	TestFrac    float64 `yaml:"test_frac"`
	HashBuckets int     `yaml:"hash_buckets,omitempty"`
	SkipBadRows bool    `yaml:"skip_bad_rows,omitempty"`
	// SynthRows, when Data is empty, trains on that many rows of
	// in-memory synthetic Criteo-shaped data (the demo).
	SynthRows    int     `yaml:"synth_rows,omitempty"`
	SynthPosRate float64 `yaml:"synth_pos_rate,omitempty"`

	// Model and training
	Model     string  `yaml:"model"`
	Layers    []int   `yaml:"layers,flow"`
	Cut       int     `yaml:"cut"`
	EmbedDim  int     `yaml:"embed_dim"`
	Epochs    int     `yaml:"epochs"`
	Batch     int     `yaml:"batch"`
	LR        float64 `yaml:"lr"`
	L2        float64 `yaml:"l2"`
	Seed      uint64  `yaml:"seed"`
	EvalEvery int     `yaml:"eval_every"`
	EvalBatch int     `yaml:"eval_batch"`
	ACEBins   int     `yaml:"ace_bins"`

	// Protection
	Protect           string  `yaml:"protect"`
	IsoT              float64 `yaml:"iso_t,omitempty"`
	IsoRatio          float64 `yaml:"iso_ratio,omitempty"`
	MarvellS          float64 `yaml:"marvell_s,omitempty"`
	MarvellErrorBound float64 `yaml:"marvell_error_bound,omitempty"`
	MarvellSumKL      float64 `yaml:"marvell_sumkl,omitempty"`
	DCorAlpha         float64 `yaml:"dcor_alpha,omitempty"`
	LabelDPEps        float64 `yaml:"label_dp_eps,omitempty"`

	// Audit
	Attacks []string `yaml:"attacks,flow"`
	// PositivesMinority is the spectral attacker's prior.
	PositivesMinority bool `yaml:"positives_minority"`

	// Output
	Out         string `yaml:"out"`
	Dump        string `yaml:"dump,omitempty"`
	DumpBatches int    `yaml:"dump_batches,omitempty"`
	// MaxSteps, when positive, stops training after that many steps
	// (a smoke-test aid; the summary says so).
	MaxSteps int64 `yaml:"max_steps,omitempty"`
}

// Default returns the configuration of the authors' Criteo experiment
// (SPEC §6) with no protection and the norm attack.
func Default() Config {
	return Config{
		Format: "criteo", Sample: 1, TestFrac: 0.1,
		Model: "wdl", Layers: []int{128, 128, 128, 128, 128, 128}, Cut: 3, EmbedDim: 4,
		Epochs: 1, Batch: 1024, LR: 1e-4, L2: 0.01, Seed: 1, EvalEvery: 100, EvalBatch: 8192, ACEBins: 15,
		Protect: "none", Attacks: []string{"norm"}, PositivesMinority: true,
		SynthPosRate: 0.25,
	}
}

// LoadConfigFile reads a YAML config over base: keys present in the file
// replace base's values; unknown keys are an error.
func LoadConfigFile(path string, base Config) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return base, fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&base); err != nil && !errors.Is(err, io.EOF) {
		return base, fmt.Errorf("config %s: %w", path, err)
	}
	return base, nil
}

// Validate checks the configuration for values that cannot work.
func (c *Config) Validate() error {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	if c.Data == "" && c.SynthRows <= 0 {
		bad("no data: give --data PATH")
	}
	if c.Out == "" {
		bad("no output directory: give --out DIR")
	}
	if c.Epochs < 1 {
		bad("epochs %d, want at least 1", c.Epochs)
	}
	if c.Batch < 2 {
		bad("batch %d, want at least 2", c.Batch)
	}
	if c.LR <= 0 {
		bad("learning rate %g, want > 0", c.LR)
	}
	if c.Sample <= 0 || c.Sample > 1 {
		bad("sample %g, want a fraction in (0, 1]", c.Sample)
	}
	if c.TestFrac <= 0 || c.TestFrac >= 1 {
		bad("test fraction %g, want a fraction in (0, 1)", c.TestFrac)
	}
	if len(c.Layers) == 0 || c.Cut < 1 || c.Cut >= len(c.Layers)+1 {
		bad("cut after layer %d of %d: the passive needs at least one layer and the cut must be a layer", c.Cut, len(c.Layers))
	}
	if c.LabelDPEps < 0 {
		bad("label DP epsilon %g, want > 0 (or 0 for off)", c.LabelDPEps)
	}
	if c.DCorAlpha < 0 {
		bad("dCor alpha %g, want ≥ 0", c.DCorAlpha)
	}
	if len(c.Attacks) == 0 {
		bad("no attacks: give at least one with --attacks")
	}
	if len(errs) > 0 {
		return errors.New("config: " + strings.Join(errs, "; "))
	}
	return nil
}
