// Package netrun runs the two parties of split learning as separate
// processes over the network: `splitguard active` (the label party, a gRPC
// server) and `splitguard passive` (the feature party, its client).
//
// A run goes through these phases:
//
//  1. Each party loads its own data file (the passive without labels; for
//     an image set the active keeps only the labels, as the CNN's top reads
//     no features) and puts its rows in the canonical order (sorted by
//     example ID; data.SortByID, the same order the in-process run uses).
//  2. Hello: the passive sends its config fingerprint (cut width, batch
//     size, seed, epochs and a digest of every setting both must share,
//     SharedDigest); the active refuses a mismatch, naming the difference.
//  3. Private ID alignment: the passive (psi.Initiator, over the PSI control
//     call) and the active (psi.Responder) compute the intersection of their
//     example IDs; neither learns the other's IDs outside it. Both keep only
//     the rows in the intersection; the train/test split is data.Assign's
//     keyed hash of (seed, ID), so both agree on it, and both derive the same
//     seeded schedule (package schedule) over the training rows. The passive
//     learns nothing about labels from which batches exist.
//  4. Resume: the passive proposes the step it is at (Checkpoint control
//     call); the active is either at that step or rolls back to its
//     checkpoint of that step, else refuses and the passive proposes an
//     older checkpoint, down to step 0.
//  5. Training and evaluation over one Train stream (transport/grpcnet),
//     with every protection and attack of the in-process mode. Every N steps
//     the two agree on a checkpoint (Checkpoint control call: the active
//     saves first, then the passive), so that a restarted party resumes
//     with its peer from the last common checkpoint.
//
// Only the protected gradient crosses the wire towards the passive: no
// label, prediction or loss value. The answer to each evaluation round
// carries the active's verdict (transport.Backward.Keep and Stop), so that
// the run keeps the model of the best validation AUC and stops early as the
// in-process run does (select: best, early_stop); each is one bit per
// evaluation about the validation AUC. The active audits what it sends (leak
// AUCs at the cut layer) and exposes Prometheus metrics; it writes the same
// run directory files as the in-process run. The passive may run the
// attacks on what it receives (red-team mode) and log label-free scores.
//
// With several passive parties (key parties) the active party serves them
// all on its one address and reads their joined connection; each passive
// is its entry of the parties list (train_parties.go, train_parties_config.go;
// checkpoints are not built there yet).
package netrun

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/pki"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/transport"
	"github.com/splitguard/splitguard/transport/grpcnet"
	"github.com/splitguard/splitguard/transport/wire"

	"github.com/splitguard/splitguard/model"
)

// Config is one party's configuration. The training keys are those of the
// in-process run (config.Config, inline); the rest are this party's network,
// security and deployment settings. YAML keys mirror the command-line flags
// (--checkpoint-every is checkpoint_every).
type Config struct {
	config.Config `yaml:",inline"`

	// Addr is where the active party listens, or the address the passive
	// party dials ("host:port").
	Addr string `yaml:"addr"`
	// Name is this party's name (its certificate's DNS name), PeerName the
	// name the peer's certificate must carry.
	Name     string `yaml:"name"`
	PeerName string `yaml:"peer_name"`
	// Cert, Key and CA are PEM files: this party's certificate and key and
	// the CA bundle the peer's certificate must chain to. CertDir, when
	// set, fills the ones left empty from a directory made by `splitguard
	// certs` (NAME.crt, NAME.key, ca.crt).
	Cert    string `yaml:"cert,omitempty"`
	Key     string `yaml:"key,omitempty"`
	CA      string `yaml:"ca,omitempty"`
	CertDir string `yaml:"cert_dir,omitempty"`
	// InsecureLoopback runs without TLS; only loopback addresses are
	// accepted.
	InsecureLoopback bool `yaml:"insecure_loopback,omitempty"`
	// Columns restricts the feature columns this party loads (nil: all).
	Columns []string `yaml:"columns,flow,omitempty"`
	// CheckpointEvery N > 0 checkpoints both parties every N steps into
	// CheckpointDir (default Out/checkpoints).
	CheckpointEvery int    `yaml:"checkpoint_every"`
	CheckpointDir   string `yaml:"checkpoint_dir,omitempty"`
	// KeepCheckpoints is how many of its newest checkpoints a party keeps
	// (0: DefaultKeepCheckpoints); older ones are deleted after a newer
	// one is written and read back intact. At least 2: the active party
	// checkpoints before the passive, so the last common checkpoint may be
	// the active's second newest.
	KeepCheckpoints int `yaml:"keep_checkpoints,omitempty"`
	// MetricsAddr, on the active party, serves Prometheus metrics on
	// http://ADDR/metrics.
	MetricsAddr string `yaml:"metrics_addr,omitempty"`
	// MetricsPublic allows MetricsAddr to be a non-loopback address. The
	// metrics carry label-derived figures (test AUC, leak AUCs) and are
	// served without authentication, so by default only loopback is
	// allowed.
	MetricsPublic bool `yaml:"metrics_public,omitempty"`
	// RedTeam, on the passive party, runs the attacks on what it receives
	// and logs label-free scores to Out/redteam.jsonl.
	RedTeam bool `yaml:"red_team,omitempty"`
	// PeerTimeout is how long a party waits for a peer that went away
	// before it ends the run, saving what was learned.
	PeerTimeout time.Duration `yaml:"peer_timeout"`
	// ExchangeTimeout bounds one training exchange (passive).
	ExchangeTimeout time.Duration `yaml:"exchange_timeout"`
	// MaxMessageMB bounds one gRPC message.
	MaxMessageMB int `yaml:"max_message_mb"`

	// loadColumns and loadIgnore are the columns this party loads and
	// those it leaves to the other party, from key columns or the
	// vertical split (set by validate: partyColumns).
	loadColumns, loadIgnore []string
}

// DefaultKeepCheckpoints is how many checkpoints a party keeps by default.
const DefaultKeepCheckpoints = 2

// Default returns the default configuration of a party: the in-process
// defaults plus a 5-minute peer timeout and checkpoints every 1000 steps.
func Default() Config {
	return Config{Config: config.Default(), PeerTimeout: 5 * time.Minute, ExchangeTimeout: 2 * time.Minute,
		CheckpointEvery: 1000, MaxMessageMB: 64}
}

// LoadConfigFile reads a YAML config over base: keys present in the file
// replace base's values; unknown keys are an error.
func LoadConfigFile(path string, base Config) (Config, error) { return config.LoadYAML(path, base) }

// validate checks the settings of a party; role is "active" or "passive".
func (c *Config) validate(role string) error {
	if err := c.Config.Validate(); err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	var problems config.Problems
	bad := problems.Add
	if c.Data == "" {
		bad("no data file (key data): each party reads its own file", config.Key("data"))
	}
	if c.MetricsAddr != "" && !c.MetricsPublic {
		if err := grpcnet.CheckLoopback(c.MetricsAddr); err != nil {
			bad("key metrics_addr %q is not a loopback address: the metrics carry label-derived figures (test AUC, leak AUCs) and are served without authentication; bind them to 127.0.0.1 (and reach them through a tunnel), or set key metrics_public to serve them to the network", c.MetricsAddr, config.Key("metrics_addr"), config.Key("metrics_public"))
		}
	}
	switch kind, ok := model.LookupKind(c.Model); {
	case !ok:
		bad("model %q: the networked parties run %s", c.Model, model.OrList(model.Kinds()))
	case !kind.Served && role != "active" && role != "passive":
		bad("model %s: %s serves %s models; the %s trains over the network but is not served",
			c.Model, role, model.OrList(model.KindsWhere(func(k model.Kind) bool { return k.Served })), strings.ToUpper(c.Model))
	}
	if data.IsImageFormat(c.Format) && len(c.Columns) > 0 {
		bad("a column list (key columns) applies to tables, not the image format %s", c.Format, config.Key("columns"))
	}
	if c.Addr == "" {
		bad("no address HOST:PORT (key addr)", config.Key("addr"))
	}
	if c.InsecureLoopback {
		if c.Addr != "" {
			if err := grpcnet.CheckLoopback(c.Addr); err != nil {
				bad("%v", err)
			}
		}
	} else {
		if c.PeerName == "" && !(c.MultiParty() && role == "active") { // the active's peers are the parties
			bad("no peer name (key peer_name): the name the peer's certificate must carry", config.Key("peer_name"))
		}
		if c.CertDir == "" && (c.Cert == "" || c.Key == "" || c.CA == "") {
			bad("no certificates: a certificate, key and CA (keys cert, key, ca), or a certificate folder (key cert_dir), or loopback without TLS on one machine (key insecure_loopback)", config.Key("cert_dir"), config.Key("insecure_loopback"))
		}
		if c.CertDir != "" && c.Name == "" && (c.Cert == "" || c.Key == "") {
			bad("a certificate folder (key cert_dir) needs this party's certificate name (key name)", config.Key("cert_dir"), config.Key("name"))
		}
	}
	if c.CheckpointEvery < 0 {
		bad("checkpoint every %d steps, want ≥ 0", c.CheckpointEvery)
	}
	if c.KeepCheckpoints != 0 && c.KeepCheckpoints < 2 {
		bad("keep %d checkpoints (key keep_checkpoints), want at least 2: the last checkpoint both parties hold may be the active party's second newest", c.KeepCheckpoints, config.Key("keep_checkpoints"))
	}
	if c.PeerTimeout <= 0 {
		bad("peer timeout %v, want > 0", c.PeerTimeout)
	}
	if c.MaxMessageMB <= 0 {
		bad("max message size %d MB, want > 0", c.MaxMessageMB)
	}
	if c.DumpBatches > 0 || c.Dump != "" {
		bad("dumps (key dump) are an in-process option", config.Key("dump"))
	}
	if c.Hijack != "" {
		bad("a training hijacker (key hijack) is an in-process simulation", config.Key("hijack"))
	}
	if c.SynthParties > 0 {
		bad("synthetic passive parties (key synth_parties) run in one process (splitguard train); over the network each passive party loads its own file with key parties", config.Key("synth_parties"), config.Key("parties"))
	}
	if c.MultiParty() {
		c.validateMultiParty(role, bad)
	}
	if len(c.FeatureAttacks) > 0 && (strings.HasPrefix(role, "active") || role == "passive" && !c.RedTeam) {
		bad("feature attacks (key feature_attacks) run in a two-party run as the passive party's audit of its own features, with its red team (key red_team)", config.Key("feature_attacks"), config.Key("red_team"))
	}
	if c.VerticalSplit() && len(c.Columns) > 0 {
		bad("both this party's columns (key columns) and a vertical split (keys passive_columns, active_columns): give one", config.Key("columns"))
	}
	c.partyColumns(strings.HasPrefix(role, "active"))
	c.multiPartyColumns(role)
	return problems.Err(role + ": config: ")
}

// prepare validates the configuration for role (validate) and sets this
// party's secret (partySecret, or 0 where opt asks for the in-process
// passports).
func (c *Config) prepare(role string, opt Options) error {
	if err := c.validate(role); err != nil {
		return err
	}
	if opt.inProcessSecret {
		c.PartySecret = 0
		return nil
	}
	secret, err := partySecret(c)
	if err != nil {
		return fmt.Errorf("%s: %w", role, err)
	}
	c.PartySecret = secret
	return nil
}

// partySecretDomain separates the party secret from any other use of the
// key's bytes.
const partySecretDomain = "splitguard/party-secret/v1"

// partySecret derives this party's secret (config.Config.PartySecret,
// which keys FedPass's passports) from its TLS private key: the first 8
// bytes of HMAC-SHA256 keyed by the key file's bytes over a fixed domain
// string. The peer does not hold the key, so it cannot redraw this
// party's passports from the shared seed; the party itself draws the same
// ones on every start (and a resumed run loads them from its checkpoint).
// Without TLS (insecure loopback, one machine) it is 0, as in process.
func partySecret(c *Config) (uint64, error) {
	if c.InsecureLoopback {
		return 0, nil
	}
	path := c.tlsFiles().Key
	key, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("party secret: reading the TLS key: %w", err)
	}
	if len(key) == 0 {
		return 0, fmt.Errorf("party secret: TLS key file %s is empty", path)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(partySecretDomain))
	return binary.LittleEndian.Uint64(m.Sum(nil)), nil
}

// tlsFiles resolves the PEM files of this party.
func (c *Config) tlsFiles() pki.Files {
	f := pki.Files{Cert: c.Cert, Key: c.Key, CA: c.CA}
	if c.CertDir != "" {
		d := pki.FilesIn(c.CertDir, c.Name)
		if f.Cert == "" {
			f.Cert = d.Cert
		}
		if f.Key == "" {
			f.Key = d.Key
		}
		if f.CA == "" {
			f.CA = d.CA
		}
	}
	return f
}

func (c *Config) checkpointDir() string {
	if c.CheckpointDir != "" {
		return c.CheckpointDir
	}
	return c.Out + "/checkpoints"
}

// resolve fills the defaults that depend on the model and format
// (config.Config.Resolve: the cut, learning rate, evaluation batch, test
// fraction, image and CNN sizes), as the in-process run does, and the
// number of checkpoints kept. A table run left with cut 0 once reached
// the training loop unresolved and indexed layer −1.
func (c *Config) resolve() {
	c.Resolve()
	if c.KeepCheckpoints == 0 {
		c.KeepCheckpoints = DefaultKeepCheckpoints
	}
}

// SharedDigest is a SHA-256 over every setting the two parties must agree
// on: the model's architecture and optimiser, the data split and sampling,
// the schedule, the evaluation cadence, the checkpoint cadence and the
// passive-side defences' parameters (config.Config.PassiveDefences). Each
// party's own settings (files, columns, protection, attacks, addresses)
// are not part of it.
func (c *Config) SharedDigest() []byte {
	s := fmt.Sprintf("model=%s layers=%v cut=%d embed_dim=%d lr=%x l2=%x batch=%d epochs=%d seed=%d "+
		"eval_every=%d eval_batch=%d max_steps=%d sample=%x test_frac=%x checkpoint_every=%d val_frac=%x",
		c.Model, c.Layers, c.Cut, c.EmbedDim, c.LR, c.L2, c.Batch, c.Epochs, c.Seed,
		c.EvalEvery, c.EvalBatch, c.MaxSteps, c.Sample, c.TestFrac, c.CheckpointEvery, c.ValFrac)
	if kind, _ := model.LookupKind(c.Model); kind.Images || data.IsImageFormat(c.Format) {
		// Images: the selection, shape and CNN settings (absent for
		// tables, whose digest is unchanged).
		s += fmt.Sprintf(" format=%s positive_class=%d pos_rate=%x neg_per_pos=%d image_size=%d image_pad=%t "+
			"image_channels=%d cnn_blocks=%d cnn_channels=%d cnn_kernel=%d cnn_dense=%d",
			c.Format, c.PositiveClass, c.PosRate, c.NegPerPos, c.ImageSize, c.ImagePad,
			c.ImageChannels, c.CNNBlocks, c.CNNChannels, c.CNNKernel, c.CNNDense)
	}
	if c.SplitSeed != 0 {
		// The data's own seed (absent when 0: the digest is then unchanged).
		s += fmt.Sprintf(" split_seed=%d", c.SplitSeed)
	}
	if w, _ := c.Wire(); w.Embedding != wire.F32 || w.Gradient != wire.F32 {
		// The message encodings (absent for f32 both ways: the digest
		// is then unchanged); Hello also compares them by name. Their
		// compression is not part of it: it changes no value, and Hello
		// compares it by name alone.
		s += fmt.Sprintf(" wire_embedding=%v wire_gradient=%v", w.Embedding, w.Gradient)
	}
	if c.Staleness != 0 || c.LocalSteps > 1 {
		// The overlap options (absent at their defaults: the digest is
		// then unchanged).
		s += fmt.Sprintf(" staleness=%d local_steps=%d", c.Staleness, max(c.LocalSteps, 1))
	}
	if c.StalenessPrediction > 0 {
		// Linear weight prediction (absent when off: the digest is then
		// unchanged).
		s += fmt.Sprintf(" staleness_prediction=%x", c.StalenessPrediction)
	}
	if c.LocalCache > 1 || c.LocalWeightThreshold != nil {
		// CELU-VFL's workset and weighting (absent when off).
		s += fmt.Sprintf(" local_cache=%d", max(c.LocalCache, 1))
		if c.LocalWeightThreshold != nil {
			s += fmt.Sprintf(" local_weight_threshold=%g", *c.LocalWeightThreshold)
		}
	}
	if c.WireFeedback {
		// Error feedback of the gradients (absent when off).
		s += " wire_feedback=true"
	}
	s += c.partiesDigest()
	if pd := c.PassiveDefences(); len(pd) > 0 {
		// The passive party applies them, the active records them
		// (absent without one: the digest is then unchanged).
		s += " passive_defences=" + strings.Join(pd, ",")
	}
	d := sha256.Sum256([]byte(s))
	return d[:]
}

// digestHint says what a digest mismatch may come from, with this party's
// settings that are hardest to spot.
func (c *Config) digestHint() string {
	pd := "none"
	if l := c.PassiveDefences(); len(l) > 0 {
		pd = strings.Join(l, ", ")
	}
	return partiesHint(c) + "the digest covers the model, optimiser, data split, schedule, evaluation and checkpoint cadence, the wire encodings and their error feedback, " +
		"and the passive-side defences, which both parties must set alike (here: " + pd + "); compare the two parties' config.yaml"
}

// fingerprint is what Hello compares.
func (c *Config) fingerprint() transport.Fingerprint {
	w, _ := c.Wire() // validated before any Hello
	return transport.Fingerprint{CutDim: c.CutDim(), BatchSize: c.Batch, Seed: c.Seed, Epochs: c.Epochs, Digest: c.SharedDigest(), Wire: w}
}

// writeConfig writes the party's resolved configuration into its run
// directory.
func writeConfig(cfg *Config) error {
	if err := os.MkdirAll(cfg.Out, rundir.DirMode); err != nil {
		return err
	}
	b, err := config.Marshal(cfg)
	if err != nil {
		return err
	}
	b = append([]byte(cfg.YAMLHeader()), b...)
	return atomicfile.WriteFile(filepath.Join(cfg.Out, rundir.ConfigFile), b, 0o644)
}

// partyColumns sets the columns the party (the active one when active)
// loads: key columns when set; under a vertical split its own list, or,
// when only the other party's is given, every column but those (as the
// in-process run splits them, config.Config.SplitFeatures); else all.
func (c *Config) partyColumns(active bool) {
	c.loadColumns, c.loadIgnore = c.Columns, nil
	if !c.VerticalSplit() {
		return
	}
	own, other := c.PassiveColumns, c.ActiveColumns
	if active {
		own, other = other, own
	}
	if len(own) > 0 {
		c.loadColumns = own
		return
	}
	c.loadIgnore = other
}
