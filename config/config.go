// Package config is the configuration of a training run and the one place
// that builds what a configuration names: the data options and loaders,
// the vertical split of a table's columns, the split model (both halves or
// either), the defences (from package protect's registry), the auditor
// (from package attack's registry), the feature attacks (attack/feature's
// registry), and the free-riding mode and integrity guard (integrity's
// registries). [Marshal] writes a configuration as the config.yaml a run
// directory holds, which [LoadYAML] reads back.
// The in-process simulation (package run), the two-party deployment
// (package netrun), inference, sweeps and benchmarks all build through it,
// so one configuration gives the same run in every mode.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/wire"
)

// Config is everything a training run needs. Its YAML keys mirror the
// command-line flags of `splitguard train` (a flag named --test-frac is the
// key test_frac).
//
// Several fields have a zero value meaning "the default of the model or
// the data format" (LR, Cut, EvalBatch, TestFrac, the image and CNN
// sizes); [Config.Resolve] replaces them, and the run directory's
// config.yaml holds the resolved values.
type Config struct {
	// Data. Format is a table (criteo, avazu, csv) or a registered image
	// set (fashion-mnist, isic; see data.IsImageFormat). For an image set an
	// empty Data means the folder it declares (data.ImageFormat.Dir).
	Data   string `yaml:"data"`
	Format string `yaml:"format"`
	// Label, Positive, Negative, IDCol, Numeric, Categorical, Ignore,
	// Sample, HashBuckets and SkipBadRows apply to tables only. Positive
	// and Negative list the label values of each class (data.Options has
	// the rules); Numeric, Categorical and Ignore declare column kinds
	// (numeric is data.Options.Dense).
	Label       string   `yaml:"label,omitempty"`
	Positive    Values   `yaml:"positive,flow,omitempty"`
	Negative    Values   `yaml:"negative,flow,omitempty"`
	IDCol       string   `yaml:"id_col,omitempty"`
	Numeric     []string `yaml:"numeric,flow,omitempty"`
	Categorical []string `yaml:"categorical,flow,omitempty"`
	Ignore      []string `yaml:"ignore,flow,omitempty"`
	Sample      float64  `yaml:"sample"`
	// TestFrac is the held-out fraction: 0 means 0.1 for tables and 0.2
	// for isic; fashion-mnist uses its own test files and needs 0.
	TestFrac    float64 `yaml:"test_frac"`
	HashBuckets int     `yaml:"hash_buckets,omitempty"`
	SkipBadRows bool    `yaml:"skip_bad_rows,omitempty"`
	// PassiveColumns and ActiveColumns are a vertical split of a table's
	// feature columns (columns.go): the passive party's bottom reads only
	// PassiveColumns, the active party's wide part (and its own-column
	// baseline) only ActiveColumns. Either list alone gives the other
	// party the remaining columns; neither (the default) lets both read
	// every column, as in the authors' experiments. In a two-party run
	// each party takes its own list when its key columns is not set.
	PassiveColumns []string `yaml:"passive_columns,flow,omitempty"`
	ActiveColumns  []string `yaml:"active_columns,flow,omitempty"`
	// Parties, when set, are two or more passive parties, each with its
	// own columns, bottom model and passive-side defences (parties.go);
	// Aggregation is how the active party combines their embeddings
	// (concat, the default, or sum).
	Parties     []Party `yaml:"parties,omitempty"`
	Aggregation string  `yaml:"aggregation,omitempty"`

	// Images (fashion-mnist and isic only).
	// PositiveClass is the Fashion-MNIST class (0…9) labelled positive.
	PositiveClass int `yaml:"positive_class"`
	// PosRate subsamples Fashion-MNIST positives to this share of each
	// split (0: the natural rate, 10% for one class).
	PosRate float64 `yaml:"pos_rate,omitempty"`
	// ImageSize is the side of the square images fed to the model (0:
	// the set's own, 28 for fashion-mnist and 84 for isic); other sizes
	// are resized with a cubic kernel, or with ImagePad a smaller
	// Fashion-MNIST image is centred on a black canvas.
	ImageSize int  `yaml:"image_size,omitempty"`
	ImagePad  bool `yaml:"image_pad,omitempty"`
	// ImageChannels is 1 (grey) or 3 (RGB); 0: the set's own (1 for
	// fashion-mnist, 3 for isic).
	ImageChannels int `yaml:"image_channels,omitempty"`
	// NegPerPos is how many benign images ISIC keeps per malignant one
	// (0: 9, the paper's 10% positives; negative: all).
	NegPerPos int `yaml:"neg_per_pos,omitempty"`
	// SynthRows, when Data is empty, trains on that many rows of
	// in-memory synthetic Criteo-shaped data (the demo).
	SynthRows    int     `yaml:"synth_rows,omitempty"`
	SynthPosRate float64 `yaml:"synth_pos_rate,omitempty"`
	// SynthParties N ≥ 2, with SynthRows and without key parties, splits
	// the synthetic table over N passive parties by how informative the
	// columns are (data.SynthPartyColumns: party 1 the label-bearing
	// columns, the others noise); Resolve writes the parties.
	SynthParties int `yaml:"synth_parties,omitempty"`
	// SynthShared ρ in [0, 1] draws the synthetic table's columns
	// correlated through a latent factor common to all of them, ρ the
	// share of each column's latent variance (data.WriteSynthShared); 0,
	// the default, draws them independently.
	SynthShared float64 `yaml:"synth_shared,omitempty"`
	// SynthSharedLabel r in [0, 1), with SynthShared > 0, draws the
	// synthetic label from the common factor by a probit model whose
	// latent has correlation r with it (data.WriteSynthTied), so every
	// column carries the label through the factor; 0, the default, leaves
	// the label apart from it.
	SynthSharedLabel float64 `yaml:"synth_shared_label,omitempty"`
	// Cheater names the passive party that cheats (keys free_ride,
	// backdoor) in a run of several passive parties; the others are
	// honest.
	Cheater string `yaml:"cheater,omitempty"`

	// Model and training. Model is wdl (Wide&Deep) or mlp for tables and
	// cnn for images. Layers, EmbedDim and L2 are Wide&Deep/MLP settings
	// (the resolved config of a CNN run clears them).
	Model  string `yaml:"model"`
	Layers []int  `yaml:"layers,flow"`
	// Cut is how many passive layers there are: deep ReLU layers for
	// wdl/mlp (0: 3), convolutional blocks for cnn (0: min(4, CNNBlocks)).
	Cut      int `yaml:"cut"`
	EmbedDim int `yaml:"embed_dim"`
	// CNNBlocks, CNNChannels, CNNKernel and CNNDense shape the CNN: that
	// many [conv K×K, ReLU, maxpool 2×2] blocks of CNNChannels filters,
	// then a Dense+ReLU layer of CNNDense units and the logit (0: the ISIC
	// model of METHODS §6, 6 blocks, 64 channels, 3×3, dense 64).
	CNNBlocks   int `yaml:"cnn_blocks,omitempty"`
	CNNChannels int `yaml:"cnn_channels,omitempty"`
	CNNKernel   int `yaml:"cnn_kernel,omitempty"`
	CNNDense    int `yaml:"cnn_dense,omitempty"`
	// Epochs and Batch: 0 means chosen from the data (auto.go).
	Epochs int `yaml:"epochs"`
	Batch  int `yaml:"batch"`
	// LR is Adam's learning rate (0: chosen from the data for wdl/mlp,
	// auto.go; the model's default 1e-5 for cnn, METHODS §6).
	LR float64 `yaml:"lr"`
	L2 float64 `yaml:"l2"`
	// WideDense is how the wide part of Wide&Deep reads the active
	// party's numeric columns: WideDenseStandardised or WideDenseMinMax
	// ("": chosen with the learning rate, auto.go).
	WideDense string `yaml:"wide_dense,omitempty"`
	// WideStart is where the wide part of Wide&Deep starts:
	// WideStartBaseline or WideStartRandom ("": chosen with the learning
	// rate, auto.go).
	WideStart string `yaml:"wide_start,omitempty"`
	// TwoProcess is set by the two-process deployment (package netrun)
	// before it resolves the configuration: the rules that need the whole
	// run in one process (key wide_start) then keep their authors' value.
	TwoProcess bool   `yaml:"-"`
	Seed       uint64 `yaml:"seed"`
	// SplitSeed, when not 0, seeds the data instead of Seed: the
	// sampling, the test split and synthetic rows (DataSeed). Runs that
	// differ in Seed alone then share one test split; package plan
	// confirms a setting on further seeds this way without reading the
	// test split.
	SplitSeed uint64 `yaml:"split_seed,omitempty"`
	// PartySecret is this party's secret, mixed into the draws the other
	// party must not be able to repeat from the shared seed (FedPass's
	// passports). It is 0 in the in-process simulation; netrun derives it
	// from the party's TLS private key. It is never written to
	// config.yaml and is not part of the settings the parties compare.
	PartySecret uint64 `yaml:"-"`
	// EvalEvery evaluates every N training steps (0: at the end only;
	// negative: chosen from the data, auto.go).
	EvalEvery int `yaml:"eval_every"`
	// EvalBatch is the rows per test-evaluation message (0: 8192 for
	// wdl/mlp, Batch for cnn, whose activations are large).
	EvalBatch int `yaml:"eval_batch"`
	ACEBins   int `yaml:"ace_bins"`

	// WireEmbedding and WireGradient are the encodings of the messages
	// between the parties (package transport/wire: f32, f16, bf16, int8, int4;
	// empty means f32): the passive rounds its embeddings to
	// WireEmbedding before sending them, the active its protected
	// gradients to WireGradient, in every mode, so that the in-process
	// run sees what a two-process run sends; grpcnet packs them in fewer
	// bytes.
	WireEmbedding string `yaml:"wire_embedding"`
	WireGradient  string `yaml:"wire_gradient"`
	// WireCompression is the lossless compression of the packed training
	// messages between two processes (wire.Compression: none, zstd; empty
	// means none and is left out of config.yaml): grpcnet compresses each
	// tensor with it when that makes it smaller. The values, and so every
	// record, are the same with and without it; an in-process run, which
	// has no wire, records the key and changes nothing else.
	WireCompression string `yaml:"wire_compression,omitempty"`
	// Staleness k > 0 pipelines the training messages: the passive sends
	// the embeddings of batches t+1, …, t+k while the gradient of batch t
	// is in flight (party/passive, pipeline.go; docs/methods/wan.md). 0,
	// the default, is the exact protocol. LocalSteps Q > 1 has each
	// party take Q−1 further local updates per exchange on the cached
	// partner message (FedBCD); 0 and 1 take none. Both are left out of
	// config.yaml at their defaults.
	Staleness  int `yaml:"staleness,omitempty"`
	LocalSteps int `yaml:"local_steps,omitempty"`
	// StalenessPrediction F > 0 has the passive forward each batch it
	// sends ahead with its bottom's weights extrapolated along the last
	// update, F times the updates it has not applied yet (linear weight
	// prediction, docs/methods/wan.md); 0, the default, does not. It
	// needs staleness > 0.
	StalenessPrediction float64 `yaml:"staleness_prediction,omitempty"`
	// LocalCache W > 1 (CELU-VFL, docs/methods/wan.md) has each party
	// keep the partner messages of the last W exchanged batches and draw
	// every local update's batch from them, least used first; 0 and 1
	// keep the batch just exchanged (FedBCD). LocalWeightThreshold ξ,
	// when set, weights each cached row of a local update by the cosine
	// similarity of its stale and fresh statistics, dropping rows under
	// ξ. Both need local_steps > 1 and staleness 0.
	LocalCache           int      `yaml:"local_cache,omitempty"`
	LocalWeightThreshold *float64 `yaml:"local_weight_threshold,omitempty"`
	// WireFeedback turns on error feedback for the gradients' rounding
	// (wire.Feedback, docs/methods/wan.md): the active adds every training
	// row's residual from its last rounding to the row's next gradient. It
	// needs a lossy WireGradient; embeddings have none (see there).
	WireFeedback bool `yaml:"wire_feedback,omitempty"`

	// Validation and model selection. ValFrac is the share of the
	// training rows held out for validation, decided by a keyed hash of
	// (seed, ID) like the test split (0: no validation split). Select is
	// the model kept and reported: SelectBest (the evaluation with the
	// best validation AUC) or SelectLast; empty means best with a
	// validation split, else last. EarlyStop N > 0 ends training after N
	// evaluations without a better validation AUC (0: never; negative:
	// chosen from the data, auto.go).
	ValFrac float64 `yaml:"val_frac"`
	Select  string  `yaml:"select"`
	// SelectMargin is by how much a later validation AUC must beat the
	// kept model's to replace it: SelectMarginSE or SelectMarginOff
	// ("": chosen with the wide part's start, auto.go).
	SelectMargin string `yaml:"select_margin,omitempty"`
	EarlyStop    int    `yaml:"early_stop"`
	// Baseline fits the centralised logistic regression (package
	// baseline) on the run's tabular features beside the split model;
	// BaselineRows caps the training rows it reads (0: baseline.DefaultMaxRows).
	Baseline     bool `yaml:"baseline"`
	BaselineRows int  `yaml:"baseline_rows,omitempty"`
	// Auto lists, in a resolved configuration, the keys whose values were
	// chosen from the data (ResolveForData) rather than given, and
	// AutoRows the number of training rows they were chosen for. Both are
	// written for the reader; values given in a file are never changed.
	Auto     []string `yaml:"auto,flow"`
	AutoRows int      `yaml:"auto_rows,omitempty"`

	// Protect names the gradient protection (protect.Names); Params holds
	// the parameters of it and of the add-on defences (dCor, label DP),
	// keyed by the registry's config keys (protect.AllParams). In YAML the
	// parameters are top-level keys like the others ("marvell_s: 4"):
	// [LoadYAML] and [Marshal] move them in and out of Params.
	Protect string         `yaml:"protect"`
	Params  protect.Params `yaml:"-"`

	// Audit
	Attacks []string `yaml:"attacks,flow"`
	// PositivesMinority is the spectral attacker's prior.
	PositivesMinority bool `yaml:"positives_minority"`
	// KnownLabels is how many training rows' labels the model-completion
	// attacker knows (half of each class; 0: DefaultKnownLabels).
	KnownLabels int `yaml:"known_labels,omitempty"`
	// TunedKnown turns on the tuned attackers (audit.Auditor.Tune,
	// docs/methods/tuned.md) with the labels of that many rows of every
	// batch known to them (2 to 64; 0: off), and those of the model
	// attacks (completion.Attacker.Tune), which know the known_labels rows;
	// TunedBudget is how many candidate settings each tries (0:
	// DefaultTunedBudget).
	TunedKnown  int `yaml:"tuned_known,omitempty"`
	TunedBudget int `yaml:"tuned_budget,omitempty"`
	// ExpensiveEvery makes the attacks whose attack.Needs.Expensive is set
	// (and their tuned attackers) score only the training batches of steps
	// 0, N, 2N, … (audit.Auditor.SampleExpensive); 0 or 1: every batch.
	ExpensiveEvery int `yaml:"expensive_every,omitempty"`
	// FeatureAttacks names the attacks of the active party on the
	// passive party's features (package attack/feature), run at every
	// evaluation of the in-process run; none by default. FeatureAux is
	// how many training rows' passive features the attacker knows (its
	// auxiliary set; 0: DefaultFeatureAux).
	FeatureAttacks []string `yaml:"feature_attacks,flow,omitempty"`
	FeatureAux     int      `yaml:"feature_aux,omitempty"`
	// Hijack makes the active party a training hijacker of the passive
	// party's bottom ("fsha": feature-space hijacking, feature.FSHA, with
	// the feature attacker's auxiliary rows as its public data; its
	// reconstruction is scored as feature attack "fsha" at every
	// evaluation; on images as the reconstructions' MSE and R² of the test
	// images, feature.ImageEvaluator); empty: honest. In-process runs only.
	Hijack string `yaml:"hijack,omitempty"`
	// HijackStop is the passive party's watch for training hijacking:
	// it refuses the active party's gradients, ending the run cleanly,
	// when the share of each gradient's rows on the minority side of
	// its principal direction (integrity.GradientSplit), averaged over
	// the last 20 training batches, falls below it (0: off).
	HijackStop float64 `yaml:"hijack_stop,omitempty"`

	// Integrity (package integrity, docs/methods/integrity.md).
	// FreeRide makes the passive party a free-rider from step
	// FreeRideFrom on: it sends embeddings that carry no information
	// (integrity.TamperNames: noise, constant, replay; empty: honest).
	FreeRide     string `yaml:"free_ride,omitempty"`
	FreeRideFrom int64  `yaml:"free_ride_from,omitempty"`
	// Detectors names the active party's detectors scoring every
	// training batch's embedding (integrity.DetectorNames; unset: the
	// default set, integrity.DefaultDetectors, in a run of one passive
	// party; [none]: no detector); IntegrityStop ends the run cleanly
	// when a detector's score reaches its threshold there (keyed by
	// detector name); IntegrityAlarm only warns (the log, summary.json's
	// integrity_alarms and warnings), each default detector at its
	// default threshold unless given (0: no alarm); see
	// integrity_defaults.go.
	Detectors      []string           `yaml:"detectors,flow,omitempty"`
	IntegrityStop  map[string]float64 `yaml:"integrity_stop,flow,omitempty"`
	IntegrityAlarm map[string]float64 `yaml:"integrity_alarm,flow,omitempty"`
	// VflipRowsThreshold is the z-score past which a pair of parties
	// votes against a block in detector vflip_rows (0:
	// integrity.VflipRowsThreshold).
	VflipRowsThreshold float64 `yaml:"vflip_rows_threshold,omitempty"`
	// Backdoor makes the passive party plant a backdoor
	// (integrity.BackdoorNames; empty: honest); see backdoor.go.
	Backdoor       string `yaml:"backdoor,omitempty"`
	BackdoorTarget int    `yaml:"backdoor_target,omitempty"`
	BackdoorKnown  int    `yaml:"backdoor_known,omitempty"`
	// BackdoorKnownIDs, when set, are the known target rows' IDs (a
	// networked passive party needs them; in process they are drawn).
	BackdoorKnownIDs []uint64 `yaml:"backdoor_known_ids,flow,omitempty"`
	BackdoorFrom     int64    `yaml:"backdoor_from,omitempty"`
	BackdoorPoison   float64  `yaml:"backdoor_poison,omitempty"`
	BackdoorAmplify  float64  `yaml:"backdoor_amplify,omitempty"`
	BackdoorTrigger  float64  `yaml:"backdoor_trigger,omitempty"`
	BackdoorDryRun   bool     `yaml:"backdoor_dry_run,omitempty"`
	// BackdoorPairing is gradient replacement's pairing of poisoned and
	// known target rows (integrity.PairingInBatch, the default, or
	// integrity.PairingFixed).
	BackdoorPairing string `yaml:"backdoor_pairing,omitempty"`
	// PassiveOptimizer makes the passive party train its bottom's dense
	// layers with another optimiser (integrity.OptimizerNames, e.g.
	// Fu et al.'s malicious_sgd; empty: Adam, honest), at learning rate
	// PassiveOptimizerLR (0: LR); see passive_optimizer.go.
	PassiveOptimizer   string  `yaml:"passive_optimizer,omitempty"`
	PassiveOptimizerLR float64 `yaml:"passive_optimizer_lr,omitempty"`
	// Contribution scores the validation split a second time at every
	// evaluation without the passive party's embedding (its mean in its
	// place): the passive party's gain in eval.jsonl and summary.json.
	// MinPassiveGain > 0 ends the run cleanly at an evaluation whose gain
	// is below it.
	Contribution   bool    `yaml:"contribution,omitempty"`
	MinPassiveGain float64 `yaml:"min_passive_gain,omitempty"`

	// Output
	Out         string `yaml:"out"`
	Dump        string `yaml:"dump,omitempty"`
	DumpBatches int    `yaml:"dump_batches,omitempty"`
	// MaxSteps, when positive, stops training after that many steps
	// (a smoke-test aid; the summary says so).
	MaxSteps int64 `yaml:"max_steps,omitempty"`
}

// DefaultKnownLabels is the model-completion attacker's known labels when
// key known_labels is not set.
const DefaultKnownLabels = 40

// DefaultTunedBudget is the tuned attacker's number of candidate settings
// when key tuned_budget is not set.
const DefaultTunedBudget = 8

// TunedBudgetOr returns the tuned attacker's budget: key tuned_budget, or
// DefaultTunedBudget when it is not set.
func (c *Config) TunedBudgetOr() int {
	if c.TunedBudget == 0 {
		return DefaultTunedBudget
	}
	return c.TunedBudget
}

// Known returns the model-completion attacker's number of known labels.
func (c *Config) Known() int {
	if c.KnownLabels == 0 {
		return DefaultKnownLabels
	}
	return c.KnownLabels
}

// Default returns the default configuration: the authors' Criteo model
// (METHODS §6) with no protection and the norm attack, a validation split,
// the logistic baseline, and the training settings (epochs, batch,
// learning rate, evaluation cadence, early stopping) left to the data
// ([Config.ResolveForData]; experiments/criteo.yaml gives the authors'
// values). The fields whose default depends on the model or format are
// left zero ([Config.Resolve] fills them).
func Default() Config {
	return Config{
		Format: "criteo", Sample: 1,
		Model: "wdl", Layers: []int{128, 128, 128, 128, 128, 128}, EmbedDim: 4,
		L2: 0.01, Seed: 1, EvalEvery: -1, EarlyStop: -1, ACEBins: 15, ValFrac: DefaultValFrac, Baseline: true,
		Protect: protect.Reference(), Attacks: []string{"norm"}, PositivesMinority: true,
		SynthPosRate: 0.25, PositiveClass: 1,
		WireEmbedding: "f32", WireGradient: "f32",
	}
}

// Wire returns the encodings of the messages between the parties (keys
// wire_embedding and wire_gradient; empty is f32) and their compression
// (key wire_compression; empty is none), or an error naming the key of an
// unknown one.
func (c *Config) Wire() (wire.Encodings, error) {
	var w wire.Encodings
	for _, k := range []struct {
		key, val string
		enc      *wire.Encoding
	}{{"wire_embedding", c.WireEmbedding, &w.Embedding}, {"wire_gradient", c.WireGradient, &w.Gradient}} {
		if k.val == "" {
			continue
		}
		e, err := wire.Parse(k.val)
		if err != nil {
			return w, Keyed(fmt.Errorf("key %s: %w", k.key, err), k.key)
		}
		*k.enc = e
	}
	if c.WireCompression != "" {
		z, err := wire.ParseCompression(c.WireCompression)
		if err != nil {
			return w, Keyed(fmt.Errorf("key wire_compression: %w", err), "wire_compression")
		}
		w.Compression = z
	}
	return w, nil
}

// Model defaults that [Config.Resolve] applies.
const (
	// DefaultDeepLR is the Adam learning rate of Wide&Deep and the MLP
	// (METHODS §6).
	DefaultDeepLR = 1e-4
	// DefaultDeepCut is the Wide&Deep/MLP cut: after the 3rd ReLU layer.
	DefaultDeepCut = 3
	// DefaultDeepEvalBatch is the Wide&Deep/MLP evaluation message size.
	DefaultDeepEvalBatch = 8192
)

// isCNN reports whether the config names a model that reads images (the
// convolutional one: model.Kind.Images).
func (c *Config) isCNN() bool {
	k, ok := model.LookupKind(c.Model)
	return ok && k.Images
}

// Resolve replaces the zero values that mean "the model's or the
// format's default" with those defaults (see the fields of [Config]). It
// is idempotent; Train calls it before writing config.yaml.
func (c *Config) Resolve() {
	c.resolveSynthParties()
	c.resolveDetectors()
	imf, image := data.LookupImageFormat(c.Format)
	if image && c.Data == "" {
		c.Data = imf.Dir
	}
	if c.WireEmbedding == "" {
		c.WireEmbedding = wire.F32.String()
	}
	if c.WireGradient == "" {
		c.WireGradient = wire.F32.String()
	}
	if c.TestFrac == 0 && !imf.TestFiles {
		c.TestFrac = data.DefaultTestFrac
		if imf.TestFrac > 0 {
			c.TestFrac = imf.TestFrac
		}
	}
	if image {
		size, channels, _ := data.ImageDefaults(c.Format)
		if c.ImageSize == 0 {
			c.ImageSize = size
		}
		if c.ImageChannels == 0 {
			c.ImageChannels = channels
		}
		if c.NegPerPos == 0 {
			c.NegPerPos = int(imf.Options["neg_per_pos"])
		}
	}
	if !c.isCNN() {
		if c.Cut == 0 {
			c.Cut = DefaultDeepCut
		}
		if c.EvalBatch == 0 {
			c.EvalBatch = DefaultDeepEvalBatch
		}
		return
	}
	d := model.DefaultCNNConfig()
	if c.CNNBlocks == 0 {
		c.CNNBlocks = d.Blocks
	}
	if c.CNNChannels == 0 {
		c.CNNChannels = d.Filters
	}
	if c.CNNKernel == 0 {
		c.CNNKernel = d.Kernel
	}
	if c.CNNDense == 0 {
		c.CNNDense = d.Dense
	}
	if c.Cut == 0 {
		c.Cut = min(d.Cut, c.CNNBlocks)
	}
	if c.LR == 0 {
		c.LR = model.DefaultCNNLR
	}
	if c.EvalBatch == 0 {
		c.EvalBatch = c.Batch
	}
	c.Layers, c.EmbedDim, c.L2, c.WideDense, c.WideStart = nil, 0, 0, "", ""
}

// LoadFile reads a YAML config over base: keys present in the file
// replace base's values; unknown keys are an error.
func LoadFile(path string, base Config) (Config, error) { return LoadYAML(path, base) }

// ParamHolder is a configuration struct that carries defence parameters
// (Config, and any struct embedding it).
type ParamHolder interface {
	DefenceParams() *protect.Params
}

// DefenceParams returns the defence parameters, for [LoadYAML].
func (c *Config) DefenceParams() *protect.Params { return &c.Params }

// LoadYAML reads the YAML file path over base, a configuration struct
// (a pointer to it must implement [ParamHolder]): keys present in the file
// replace base's values; the registered defence parameters go to its
// Params; a key that names no field and no parameter is an error, and so
// is a missing or unreadable file.
func LoadYAML[T any](path string, base T) (T, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return base, err
	}
	if err := DecodeYAML(raw, &base); err != nil {
		return base, fmt.Errorf("%s: %w", path, err)
	}
	return base, nil
}

// DecodeYAML decodes a YAML mapping into *v as [LoadYAML] does.
func DecodeYAML[T any](raw []byte, v *T) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil // an empty file sets nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: want a mapping of keys to values", root.Line)
	}
	holder, _ := any(v).(ParamHolder)
	kept := root.Content[:0:0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, val := root.Content[i], root.Content[i+1]
		if _, isParam := protect.ParamOwner(k.Value); isParam && holder != nil {
			var x float64
			if err := val.Decode(&x); err != nil {
				return fmt.Errorf("line %d: %s: %w", k.Line, k.Value, err)
			}
			p := holder.DefenceParams()
			if *p == nil {
				*p = protect.Params{}
			}
			(*p)[k.Value] = x
			continue
		}
		kept = append(kept, k, val)
	}
	root.Content = kept
	rest, err := yaml.Marshal(root)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(rest))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Marshal renders a configuration struct as YAML with its defence
// parameters as top-level keys, the form [LoadYAML] reads. A comment at
// the top names the matrix engine this process computes with (a run's
// figures differ in the last bits between engines).
func Marshal[T any](v *T) ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(v); err != nil {
		return nil, err
	}
	root.HeadComment = "matrix engine: " + tensor.Default.Name()
	if h, ok := any(v).(ParamHolder); ok && root.Kind == yaml.MappingNode {
		p := *h.DefenceParams()
		for _, par := range protect.AllParams() {
			if x, ok := p[par.Key]; ok {
				var kn, vn yaml.Node
				kn.SetString(par.Key)
				if err := vn.Encode(x); err != nil {
					return nil, err
				}
				root.Content = append(root.Content, &kn, &vn)
			}
		}
	}
	return yaml.Marshal(&root)
}

// Validate checks the configuration for values that cannot work. It
// checks the resolved values (see [Config.Resolve]) without changing c, so
// a config with defaults still to fill is valid.
func (c *Config) Validate() error {
	r := *c
	r.Layers = append([]int(nil), c.Layers...)
	r.Resolve()
	return r.validate()
}

func (c *Config) validate() error {
	var problems problemList
	bad := problems.add
	if c.Data == "" && c.SynthRows <= 0 {
		bad("no data: set the data path (key data) or synthetic rows (key synth_rows)", keyArg("data"), keyArg("synth_rows"))
	}
	c.validateData(bad)
	c.validateModel(bad)
	if c.Out == "" {
		bad("no output directory (key out)", keyArg("out"))
	}
	if c.Epochs < 0 {
		bad("epochs %d, want at least 1 (or 0: chosen from the data)", c.Epochs)
	}
	if c.Batch == 1 || c.Batch < 0 {
		bad("batch %d, want at least 2 (or 0: chosen from the data)", c.Batch)
	}
	if c.LR < 0 || !(c.LR == c.LR) {
		bad("learning rate %g, want > 0 (or 0: chosen from the data)", c.LR)
	}
	c.validateSelection(bad)
	c.validateWideDense(bad)
	c.validateWideStart(bad)
	c.validateSelectMargin(bad)
	c.validateIntegrity(bad)
	c.validateHijack(bad)
	if w, err := c.Wire(); err != nil {
		bad("%v", err)
	} else if c.WireFeedback && w.Gradient == wire.F32 {
		bad("key wire_feedback: error feedback needs a lossy wire_gradient (f16, bf16, int8 or int4); f32 sends the gradient exactly", keyArg("wire_feedback"))
	}
	if c.Staleness < 0 || c.Staleness >= transport.MaxInFlight {
		bad("key staleness: %d, want 0 to %d (the batches in flight beyond the one answered)", c.Staleness, transport.MaxInFlight-1, keyArg("staleness"))
	}
	switch p := c.StalenessPrediction; {
	case !(p >= 0 && p <= 16):
		bad("key staleness_prediction: %v, want 0 to 16", p, keyArg("staleness_prediction"))
	case p > 0 && c.Staleness == 0:
		bad("key staleness_prediction needs key staleness > 0: the exact protocol sends no batch ahead of its updates", keyArg("staleness_prediction"), keyArg("staleness"))
	}
	if c.LocalSteps < 0 {
		bad("key local_steps: %d, want ≥ 1 (0 means 1)", c.LocalSteps, keyArg("local_steps"))
	}
	c.checkCELU(bad)
	if c.Sample <= 0 || c.Sample > 1 {
		bad("sample %g, want a fraction in (0, 1]", c.Sample)
	}
	if c.KnownLabels < 0 || c.KnownLabels == 1 {
		bad("known labels %d, want at least 2, one of each class (key known_labels)", c.KnownLabels, keyArg("known_labels"))
	}
	if c.TunedKnown < 0 || c.TunedKnown == 1 || c.TunedKnown > 64 {
		bad("tuned attacker's known rows %d, want 2 to 64 (or 0: off) (key tuned_known)", c.TunedKnown, keyArg("tuned_known"))
	}
	if c.ExpensiveEvery < 0 {
		bad("expensive attacks every %d batches, want ≥ 1 (or 0: every batch) (key expensive_every)", c.ExpensiveEvery, keyArg("expensive_every"))
	}
	if c.TunedBudget < 0 {
		bad("tuned attacker's budget %d, want ≥ 1 (or 0: %d) (key tuned_budget)", c.TunedBudget, DefaultTunedBudget, keyArg("tuned_budget"))
	} else if c.TunedBudget > 0 && c.TunedKnown == 0 {
		bad("tuned attacker's budget %d without its known rows (key tuned_budget needs key tuned_known)", c.TunedBudget, keyArg("tuned_budget"), keyArg("tuned_known"))
	}
	c.validateSplit(bad)
	c.validateParties(bad)
	if len(c.Attacks) == 0 {
		bad("no attacks: name at least one (key attacks)", keyArg("attacks"))
	} else if err := checkAttacks(c.Attacks); err != nil {
		bad("%v", err)
	}
	// Building the protector checks its name and parameters (e.g. iso
	// without a noise ratio) before any data is read.
	if _, err := protect.New(c.Protect, c.Params); err != nil {
		bad("%w", err)
	}
	return problems.err("config: ")
}

// validateData checks the data settings against the format.
func (c *Config) validateData(bad func(string, ...any)) {
	imf, image := data.LookupImageFormat(c.Format)
	if image && c.Data == "" && c.SynthRows > 0 {
		bad("format %s reads images from a folder (key data); synthetic rows (key synth_rows) are tabular", c.Format, keyArg("data"), keyArg("synth_rows"))
	}
	if !image {
		if c.TestFrac <= 0 || c.TestFrac >= 1 {
			bad("test fraction %g, want a fraction in (0, 1)", c.TestFrac)
		}
		for _, f := range []struct {
			set bool
			key string
		}{
			{c.PosRate != 0, "pos_rate"}, {c.ImageSize != 0, "image_size"}, {c.ImagePad, "image_pad"},
			{c.ImageChannels != 0, "image_channels"}, {c.NegPerPos != 0, "neg_per_pos"},
		} {
			if f.set {
				bad("key %s applies to the image formats (%s), not %s", f.key, strings.Join(data.ImageFormats(), ", "), c.Format, keyArg(f.key))
			}
		}
		return
	}
	for _, f := range []struct {
		set bool
		key string
	}{
		{c.Label != "", "label"}, {len(c.Positive) > 0, "positive"}, {len(c.Negative) > 0, "negative"}, {c.IDCol != "", "id_col"},
		{len(c.Numeric) > 0, "numeric"}, {len(c.Categorical) > 0, "categorical"}, {len(c.Ignore) > 0, "ignore"},
		{c.Sample != 1, "sample"}, {c.HashBuckets != 0, "hash_buckets"}, {c.SkipBadRows, "skip_bad_rows"},
	} {
		if f.set {
			bad("key %s applies to tables, not the image format %s", f.key, c.Format, keyArg(f.key))
		}
	}
	c.validateImageFormat(imf, bad)
	if !(c.PosRate >= 0 && c.PosRate < 1) {
		bad("positive rate %g, want a fraction in [0, 1) (0: the natural rate)", c.PosRate)
	}
	if c.ImageSize < 1 || c.ImageSize > 4096 {
		bad("image size %d, want 1…4096 (or 0 for the set's own)", c.ImageSize)
	}
	if c.ImageChannels != 1 && c.ImageChannels != 3 {
		bad("%d image channels, want 1 or 3 (or 0 for the set's own)", c.ImageChannels)
	}
}

// validateModel checks the model settings and that the model reads the
// kind of data the format gives.
func (c *Config) validateModel(bad func(string, ...any)) {
	image := data.IsImageFormat(c.Format)
	kind, known := model.LookupKind(c.Model)
	imageModels := model.OrList(model.KindsWhere(func(k model.Kind) bool { return k.Images }))
	switch {
	case !known:
		bad("unknown model %q (want %s)", c.Model, model.OrList(model.Kinds()))
	case !kind.Images:
		if image {
			bad("model %s reads tables; the image format %s needs model %s (key model)", c.Model, c.Format, imageModels, keyArg("model"))
		}
		for _, f := range []struct {
			set bool
			key string
		}{
			{c.CNNBlocks != 0, "cnn_blocks"}, {c.CNNChannels != 0, "cnn_channels"},
			{c.CNNKernel != 0, "cnn_kernel"}, {c.CNNDense != 0, "cnn_dense"},
		} {
			if f.set {
				bad("key %s applies to model %s, not %s", f.key, imageModels, c.Model, keyArg(f.key))
			}
		}
		badWidth := false
		for _, w := range c.Layers {
			badWidth = badWidth || w < 1
		}
		if badWidth {
			bad("layer widths %v: every deep layer needs at least one unit (key layers)", c.Layers, keyArg("layers"))
		} else if len(c.Layers) == 0 || c.Cut < 1 || c.Cut >= len(c.Layers)+1 {
			bad("cut after layer %d of %d (keys cut and layers): the passive needs at least one layer and the cut must be one of the deep layers", c.Cut, len(c.Layers), keyArg("cut"))
		}
	default:
		if !image {
			args := []any{c.Model, orList(data.ImageFormats()), "format " + c.Format, keyArg("format")}
			if c.Data == "" {
				args[2] = "synthetic tabular data (key synth_rows)"
				args = append(args, keyArg("synth_rows"))
			}
			bad("model %s reads images (key format: %s), not %s", args...)
		}
		if c.CNNBlocks < 1 || c.CNNChannels < 1 || c.CNNKernel < 1 || c.CNNDense < 1 {
			bad("CNN of %d blocks, %d channels, kernel %d, dense %d: every size must be positive", c.CNNBlocks, c.CNNChannels, c.CNNKernel, c.CNNDense)
		}
		if c.Cut < 1 || c.Cut > c.CNNBlocks {
			bad("cut after block %d of %d: the CNN's cut counts convolutional blocks, 1…%d", c.Cut, c.CNNBlocks, c.CNNBlocks)
		}
		if image && c.ImageSize >= 1 && c.CNNBlocks >= 1 {
			if most := maxBlocks(c.ImageSize); c.CNNBlocks > most {
				bad("%d CNN blocks on %d×%d images: each block halves the side, so at most %d fit (fewer blocks, key cnn_blocks, or larger images, key image_size)", c.CNNBlocks, c.ImageSize, c.ImageSize, most, keyArg("cnn_blocks"), keyArg("image_size"))
			}
		}
	}
}

// maxBlocks returns how many 2×2 poolings an s×s image allows.
func maxBlocks(s int) int {
	n := 0
	for ; s >= 2; s /= 2 {
		n++
	}
	return n
}
