package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/netrun"
)

func init() { subcommands = append(subcommands, newPassiveCmd) }

func newPassiveCmd() *cobra.Command {
	return newPartyCmd(&cobra.Command{
		Use:   "passive --data PATH --out DIR --addr HOST:PORT [flags]",
		Short: "Run the passive (feature) party of a two-process run: gRPC client with mutual TLS",
		Long: "passive loads its data file without labels, connects to the active party at --addr, aligns example\n" +
			"IDs by private set intersection, resumes from the last common checkpoint and trains its bottom model,\n" +
			"sending cut-layer embeddings and applying the protected gradients it gets back.",
	}, newPassiveScoreCmd(), func(ctx context.Context, cmd *cobra.Command, cfg netrun.Config, log *slog.Logger) error {
		res, err := netrun.RunPassive(ctx, cfg, netrun.Options{Logger: log, Force: forceFlag(cmd)})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "passive: %d steps in %d session(s); sent %d bytes, received %d bytes; model in %s/bottom.model\n",
			res.Steps, res.Sessions, res.Stats.BytesSent, res.Stats.BytesReceived, cfg.Out)
		return nil
	})
}
