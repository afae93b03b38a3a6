package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/netrun"
)

// inferenceFlags are the settings of `active serve` and `passive score`
// that may override the training run's config.yaml.
type inferenceFlags struct {
	run, config, model           string
	data, addr, name, peer       string
	cert, key, ca, certDir       string
	insecure                     bool
	peerTimeout, exchangeTimeout time.Duration
	maxMB, evalBatch             int
}

func (f *inferenceFlags) bind(fs *pflag.FlagSet, role, modelFile string) {
	fs.StringVar(&f.run, "run", "", "the party's training run directory ("+role+"'s --out): config.yaml, "+modelFile+", encoding")
	fs.StringVar(&f.config, "config", "", "training config (default RUN/config.yaml)")
	fs.StringVar(&f.model, "model", "", "trained model (default RUN/"+modelFile+")")
	fs.StringVar(&f.data, "data", "", "data file (default: the training config's); encoded with the training data's encoding (RUN/encoding)")
	fs.StringVar(&f.addr, "addr", "", "active: address to listen on; passive: the active party's address (HOST:PORT)")
	fs.StringVar(&f.name, "name", "", "this party's certificate name (with --cert-dir)")
	fs.StringVar(&f.peer, "peer-name", "", "name the peer's certificate must carry (pinned)")
	fs.StringVar(&f.cert, "cert", "", "this party's certificate (PEM)")
	fs.StringVar(&f.key, "key", "", "this party's private key (PEM)")
	fs.StringVar(&f.ca, "ca", "", "CA bundle the peer's certificate must chain to (PEM)")
	fs.StringVar(&f.certDir, "cert-dir", "", "directory made by `splitguard certs` (NAME.crt, NAME.key, ca.crt)")
	fs.BoolVar(&f.insecure, "insecure-loopback", false, "no TLS; refuses any non-loopback address (tests and demos on one machine)")
	fs.DurationVar(&f.peerTimeout, "peer-timeout", 0, "how long to wait for the peer (default: the training config's)")
	fs.DurationVar(&f.exchangeTimeout, "exchange-timeout", 0, "passive: bound on one scoring exchange before it is re-sent")
	fs.IntVar(&f.maxMB, "max-message-mb", 0, "largest gRPC message in MiB (default: the training config's)")
	fs.IntVar(&f.evalBatch, "eval-batch", 0, "passive: rows per scoring message (default: the training config's --eval-batch)")
}

// resolve reads the training config and applies the flags the user set.
func (f *inferenceFlags) resolve(fs *pflag.FlagSet) (netrun.Config, error) {
	path := f.config
	if path == "" {
		if f.run == "" {
			return netrun.Config{}, errors.New("give --run DIR (the party's training run directory) or --config FILE")
		}
		path = filepath.Join(f.run, "config.yaml")
	}
	cfg, err := netrun.LoadConfigFile(path, netrun.Default())
	if err != nil {
		return cfg, err
	}
	if f.run != "" {
		cfg.Out = f.run
	}
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
		}
	}
	set("data", func() { cfg.Data = f.data })
	set("addr", func() { cfg.Addr = f.addr })
	set("name", func() { cfg.Name = f.name })
	set("peer-name", func() { cfg.PeerName = f.peer })
	set("cert", func() { cfg.Cert = f.cert })
	set("key", func() { cfg.Key = f.key })
	set("ca", func() { cfg.CA = f.ca })
	set("cert-dir", func() { cfg.CertDir = f.certDir })
	set("insecure-loopback", func() { cfg.InsecureLoopback = f.insecure })
	set("peer-timeout", func() { cfg.PeerTimeout = f.peerTimeout })
	set("exchange-timeout", func() { cfg.ExchangeTimeout = f.exchangeTimeout })
	set("max-message-mb", func() { cfg.MaxMessageMB = f.maxMB })
	set("eval-batch", func() { cfg.EvalBatch = f.evalBatch })
	if cfg.InsecureLoopback && fs.Changed("cert-dir") && !fs.Changed("insecure-loopback") {
		cfg.InsecureLoopback = false
	}
	return cfg, nil
}

// newInferenceCmd completes cmd (its Use and texts set) as `active serve`
// or `passive score`: the inference flags of role, whose trained model is
// RUN/modelFile, with --model copied to *model before body runs with the
// resolved config.
func newInferenceCmd(cmd *cobra.Command, role, modelFile string, model *string, body partyBody) *cobra.Command {
	var f inferenceFlags
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runParty(cmd, func() (netrun.Config, error) { return f.resolve(cmd.Flags()) },
			func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error {
				*model = f.model
				return body(ctx, cmd, cfg, log)
			})
	}
	f.bind(cmd.Flags(), role, modelFile)
	return cmd
}

func newActiveServeCmd() *cobra.Command {
	var so netrun.ServeOptions
	cmd := newInferenceCmd(&cobra.Command{
		Use:   "serve --run DIR --addr HOST:PORT --out FILE [flags]",
		Short: "Score the examples a passive party sends (inference) with the trained top model",
		Long: "serve loads the top model of a training run (RUN/top.model; networked or in-process `train`) and its own\n" +
			"data file, encoded with the training data's encoding (RUN/encoding), listens on\n" +
			"--addr and serves scoring sessions: the passive party (`splitguard passive score`) sends cut-layer\n" +
			"embeddings of the example IDs both hold (aligned by private set intersection) and the active scores them\n" +
			"with its own wide features. The scores are written to --out (id,score) on this side; they are returned\n" +
			"to the passive party only with --share-scores, because predictions of a model fitted to the labels\n" +
			"reveal the labels the gradient protection kept from it.",
	}, "active", "top.model", &so.Model, func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error {
		if so.Out == "" && !so.ShareScores {
			return errors.New("active serve: give --out FILE for the scores (or --share-scores to return them to the passive party)")
		}
		res, err := netrun.Serve(ctx, cfg, so, netrun.Options{Logger: log,
			Ready: func(addr string) { fmt.Fprintln(cmd.ErrOrStderr(), "active party serving on", addr) }})
		if res != nil {
			fmt.Fprintf(cmd.OutOrStdout(), "active serve: %d session(s), %d rows scored; scores in %v; shared with the passive party: %v\n",
				res.Sessions, res.Scored, res.Files, so.ShareScores)
		}
		return err
	})
	cmd.Flags().StringVar(&so.Out, "out", "", "CSV file (id,score) for the scores; session k > 1 writes FILE.k")
	cmd.Flags().BoolVar(&so.ShareScores, "share-scores", false, "return the scores to the passive party (they reveal label information)")
	cmd.Flags().IntVar(&so.Sessions, "sessions", 1, fmt.Sprintf("scoring sessions to serve before exiting (1 to %d: each answers a PSI over this party's IDs)", netrun.MaxServeSessions))
	cmd.Flags().DurationVar(&so.SessionInterval, "session-interval", netrun.DefaultSessionInterval, "least time between the starts of two scoring sessions (bounds the rate of PSI queries)")
	return cmd
}

func newPassiveScoreCmd() *cobra.Command {
	var so netrun.ScoreOptions
	cmd := newInferenceCmd(&cobra.Command{
		Use:   "score --run DIR --addr HOST:PORT [--data FILE] [--out FILE] [flags]",
		Short: "Have the active party score this party's examples with the trained models (inference)",
		Long: "score loads the bottom model of a training run (RUN/bottom.model; networked or in-process `train`) and\n" +
			"the rows of --split of its data file, encoded with the training data's encoding (RUN/encoding), aligns their IDs with the active party by private set intersection, and sends the\n" +
			"cut-layer embeddings of the rows the active holds (rows it does not hold are reported, not scored).\n" +
			"The active party keeps the scores unless it runs with --share-scores; then they are written to --out.",
	}, "passive", "bottom.model", &so.Model, func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error {
		if so.Split == "" {
			so.Split = "test"
			if cmd.Flags().Changed("data") {
				so.Split = "all"
			}
		}
		res, err := netrun.Score(ctx, cfg, so, netrun.Options{Logger: log})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		fmt.Fprintf(out, "passive score: %d rows selected, %d scored, %d not held by the active party (not scored)\n",
			res.Rows, res.Scored, res.Unscored)
		switch {
		case res.Shared && so.Out != "":
			fmt.Fprintf(out, "scores written to %s\n", so.Out)
		case res.Shared:
			fmt.Fprintln(out, "the active party shared the scores; give --out FILE to keep them")
		default:
			fmt.Fprintln(out, "the active party kept the scores (it runs without --share-scores)")
			if so.Out != "" {
				fmt.Fprintf(out, "%s not written\n", so.Out)
			}
		}
		return nil
	})
	cmd.Flags().StringVar(&so.Split, "split", "", "rows of the data file to score: test, train or all (the split of the training options;\n"+
		"default: test of the training data file, all of a file given with --data)")
	cmd.Flags().StringVar(&so.Out, "out", "", "CSV file (id,score) for the scores, if the active party shares them")
	cmd.Flags().StringVar(&so.Unscored, "unscored", "", "write the IDs the active party does not hold here (one per line)")
	return cmd
}
