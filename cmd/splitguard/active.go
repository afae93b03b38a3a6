package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/splitguard/splitguard/netrun"
)

func init() { subcommands = append(subcommands, newActiveCmd) }

// netFlags binds the flags of `active` and `passive` to a netrun.Config:
// the training flags of `train` plus the network, security and checkpoint
// settings. Every flag has a config-file key of the same name with dashes
// as underscores.
func netFlags(fs *pflag.FlagSet, c *netrun.Config) {
	trainFlags(fs, &c.Config)
	fs.StringVar(&c.Addr, "addr", c.Addr, "active: address to listen on; passive: the active party's address (HOST:PORT)")
	fs.StringVar(&c.Name, "name", c.Name, "this party's certificate name (with --cert-dir)")
	fs.StringVar(&c.PeerName, "peer-name", c.PeerName, "name the peer's certificate must carry (pinned)")
	fs.StringVar(&c.Cert, "cert", c.Cert, "this party's certificate (PEM)")
	fs.StringVar(&c.Key, "key", c.Key, "this party's private key (PEM)")
	fs.StringVar(&c.CA, "ca", c.CA, "CA bundle the peer's certificate must chain to (PEM)")
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "directory made by `splitguard certs` (NAME.crt, NAME.key, ca.crt)")
	fs.BoolVar(&c.InsecureLoopback, "insecure-loopback", c.InsecureLoopback, "no TLS; refuses any non-loopback address (tests and demos on one machine)")
	fs.StringSliceVar(&c.Columns, "columns", c.Columns, "feature columns this party loads (default: all)")
	fs.IntVar(&c.CheckpointEvery, "checkpoint-every", c.CheckpointEvery, "checkpoint both parties every N steps (0: never)")
	fs.StringVar(&c.CheckpointDir, "checkpoint-dir", c.CheckpointDir, "checkpoint directory (default OUT/checkpoints)")
	fs.IntVar(&c.KeepCheckpoints, "keep-checkpoints", c.KeepCheckpoints, "newest checkpoints each party keeps, at least 2 (0: 2); older ones are deleted")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "active: serve Prometheus metrics on http://ADDR/metrics")
	fs.BoolVar(&c.MetricsPublic, "metrics-public", c.MetricsPublic, "active: allow --metrics-addr on a non-loopback address (the metrics are unauthenticated)")
	fs.BoolVar(&c.RedTeam, "red-team", c.RedTeam, "passive: run the label-free attacks on what it receives, log to OUT/redteam.jsonl")
	fs.DurationVar(&c.PeerTimeout, "peer-timeout", c.PeerTimeout, "end the run (saving the model) after the peer has been away this long")
	fs.DurationVar(&c.ExchangeTimeout, "exchange-timeout", c.ExchangeTimeout, "passive: bound on one training exchange before it is re-sent")
	fs.IntVar(&c.MaxMessageMB, "max-message-mb", c.MaxMessageMB, "largest gRPC message in MiB")
}

// resolveNetConfig applies, in order: defaults, the config file, then the
// flags the user set explicitly.
func resolveNetConfig(fs *pflag.FlagSet, configFile string, fromFlags netrun.Config) (netrun.Config, error) {
	if configFile == "" {
		return fromFlags, nil
	}
	fileCfg, err := netrun.LoadConfigFile(configFile, netrun.Default())
	if err != nil {
		return fromFlags, err
	}
	err = reapplyFlags(fs, func(over *pflag.FlagSet) { netFlags(over, &fileCfg) })
	return fileCfg, err
}

// signalContext is the command's context, cancelled by SIGINT or SIGTERM
// (notifyStop), which log names.
func signalContext(cmd *cobra.Command, log *slog.Logger) (context.Context, func()) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return notifyStop(ctx, func(name string) { log.Warn("received a signal: stopping the run", "signal", name) })
}

// partyBody is the work of a networked party command (`active`, `passive`
// and their inference subcommands), given the resolved config, a context
// cancelled on interrupt and a text logger on stderr.
type partyBody func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error

// forceFlag reads the --force flag of a party command (false for its
// inference subcommands, which have none).
func forceFlag(cmd *cobra.Command) bool {
	f, err := cmd.Flags().GetBool("force")
	return err == nil && f
}

// runParty resolves the command's config and runs body with it.
func runParty(cmd *cobra.Command, resolve func() (netrun.Config, error), body partyBody) error {
	cfg, err := resolve()
	if err != nil {
		return err
	}
	log := newPartyLogger(cmd.ErrOrStderr(), cmd)
	ctx, stop := signalContext(cmd, log)
	defer stop()
	return body(ctx, cmd, cfg, log)
}

// newPartyCmd completes cmd (its Use and texts set) as `active` or
// `passive`: the flags of netFlags and --config, sub as its subcommand,
// and body run with the resolved config.
func newPartyCmd(cmd, sub *cobra.Command, body partyBody) *cobra.Command {
	cfg := netrun.Default()
	var configFile string
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return runParty(cmd, func() (netrun.Config, error) { return resolveNetConfig(cmd.Flags(), configFile, cfg) }, body)
	}
	netFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&configFile, "config", "", "YAML config file; its keys mirror the flags, flags given on the command line win")
	var force bool
	addForceFlag(cmd.Flags(), &force)
	cmd.Long += "\n\nIt refuses an --out that holds another run (a finished one, or one of another configuration) unless\n" +
		"--force (which also deletes that run's checkpoints); restarted with the same configuration, it resumes.\n\n" + exitStatusHelp
	cmd.AddCommand(sub)
	return cmd
}

func newActiveCmd() *cobra.Command {
	return newPartyCmd(&cobra.Command{
		Use:   "active --data PATH --out DIR --addr HOST:PORT [flags]",
		Short: "Run the active (label) party of a two-process run: gRPC server with mutual TLS",
		Long: "active loads its data file (with labels), listens on --addr, aligns example IDs with the passive\n" +
			"party by private set intersection, answers its training batches with protected gradients, audits\n" +
			"what it sends (leak AUCs at the cut layer) and writes the run directory like `train`.",
	}, newActiveServeCmd(), func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error {
		sum, err := netrun.RunActive(ctx, cfg, netrun.Options{Logger: log, Force: forceFlag(cmd),
			Ready: func(addr string) { fmt.Fprintln(cmd.ErrOrStderr(), "active party listening on", addr) }})
		if err != nil {
			return err
		}
		printSummary(cmd.OutOrStdout(), cfg.Config, sum)
		return nil
	})
}
