package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/netrun"
)

func init() { subcommands = append(subcommands, newPassiveCmd) }

func newPassiveCmd() *cobra.Command {
	cfg := netrun.Default()
	var configFile string
	cmd := &cobra.Command{
		Use:   "passive --data PATH --out DIR --addr HOST:PORT [flags]",
		Short: "Run the passive (feature) party of a two-process run: gRPC client with mutual TLS",
		Long: "passive loads its data file without labels, connects to the active party at --addr, aligns example\n" +
			"IDs by private set intersection, resumes from the last common checkpoint and trains its bottom model,\n" +
			"sending cut-layer embeddings and applying the protected gradients it gets back.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			final, err := resolveNetConfig(cmd.Flags(), configFile, cfg)
			if err != nil {
				return err
			}
			ctx, stop := signalContext(cmd)
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			res, err := netrun.RunPassive(ctx, final, netrun.Options{Logger: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "passive: %d steps in %d session(s); sent %d bytes, received %d bytes; model in %s/bottom.model\n",
				res.Steps, res.Sessions, res.Stats.BytesSent, res.Stats.BytesReceived, final.Out)
			return nil
		},
	}
	netFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&configFile, "config", "", "YAML config file; its keys mirror the flags, flags given on the command line win")
	cmd.AddCommand(newPassiveScoreCmd())
	return cmd
}
