package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/pki"
)

func init() { subcommands = append(subcommands, newCertsCmd) }

// newCertsCmd is `splitguard certs`: a test CA and party certificates for
// running the two parties as separate processes over mutual TLS.
func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make a test CA and party certificates for mutual TLS between the parties",
	}
	cmd.AddCommand(newCertsInitCmd(), newCertsIssueCmd())
	return cmd
}

func newCertsInitCmd() *cobra.Command {
	var (
		dir   string
		days  int
		force bool
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a CA (ECDSA P-256 key and self-signed certificate) in --dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days <= 0 {
				return fmt.Errorf("certs init: --days must be positive, got %d", days)
			}
			if err := pki.InitCA(dir, pki.CAOptions{Validity: time.Duration(days) * 24 * time.Hour, Force: force}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/%s and %s/%s\n", dir, pki.CACertFile, dir, pki.CAKeyFile)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the CA files (created if missing)")
	cmd.Flags().IntVar(&days, "days", 365, "validity of the CA certificate in days")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing CA (invalidates every certificate it issued)")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

func newCertsIssueCmd() *cobra.Command {
	var (
		dir, name string
		hosts     []string
		days      int
		force     bool
	)
	cmd := &cobra.Command{
		Use:   "issue",
		Short: "Issue a party certificate (TLS server and client) signed by the CA in --dir",
		Long: "Issue writes NAME.crt and NAME.key (mode 0600) into --dir. The certificate carries NAME as a\n" +
			"DNS name (the name the peer pins) plus every --host (IP addresses or DNS names).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days <= 0 {
				return fmt.Errorf("certs issue: --days must be positive, got %d", days)
			}
			certPath, keyPath, err := pki.Issue(dir, name, pki.IssueOptions{Hosts: hosts, Validity: time.Duration(days) * 24 * time.Hour, Force: force})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %s\n", certPath, keyPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory holding the CA (from certs init)")
	cmd.Flags().StringVar(&name, "name", "", "party name, e.g. active or passive (a DNS name)")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "extra subject alternative name (repeatable)")
	cmd.Flags().IntVar(&days, "days", 365, "validity in days (cut to the CA's expiry)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing NAME.key and NAME.crt")
	_ = cmd.MarkFlagRequired("dir")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}
