package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/deploy"
)

func init() { subcommands = append(subcommands, newDeployCmd) }

func newDeployCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Write deployment manifests (Kubernetes) for a two-party training run",
	}
	var name, image, activeCfg, passiveCfg, addr, out string
	var cpus, memMB, storageGB int
	k8s := &cobra.Command{
		Use:   "k8s --name NAME --active-config FILE --passive-config FILE --image IMAGE --out DIR",
		Short: "Write Kubernetes manifests for a two-party run: the active Job and Service, the passive Job",
		Long: `k8s writes DIR/NAME-k8s.yaml: the active party's objects (ConfigMap with its config, volume claim
for data and run directory, Job, Service on port 7443), then the passive party's (ConfigMap, volume
claim, Job dialling --active-addr, default the Service NAME-active:7443 in the same namespace). Each
party normally applies its own objects in its own cluster. Certificates come from Secrets the parties make from 'splitguard certs'
files, never from the manifests:

  kubectl create secret generic NAME-active-pki --from-file=pki/active.crt --from-file=pki/active.key --from-file=pki/ca.crt
  kubectl create secret generic NAME-passive-pki --from-file=pki/passive.crt --from-file=pki/passive.key --from-file=pki/ca.crt

The active party's certificate must name the address the passive party dials (certs issue --host).
Data paths in the configs refer to the volume mounted at /data. No cluster is reachable where these
manifests were written and tested: they are checked against the Kubernetes API types only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" || activeCfg == "" || passiveCfg == "" || image == "" || name == "" {
				return fmt.Errorf("deploy k8s: give --name, --active-config, --passive-config, --image and --out")
			}
			a, err := os.ReadFile(activeCfg)
			if err != nil {
				return fmt.Errorf("deploy k8s: %w", err)
			}
			p, err := os.ReadFile(passiveCfg)
			if err != nil {
				return fmt.Errorf("deploy k8s: %w", err)
			}
			text, err := deploy.K8sTrainingManifests(deploy.K8sTraining{Name: name, Image: image, ActiveConfig: a, PassiveConfig: p,
				ActiveAddr: addr, CPUs: cpus, MemoryMB: memMB, StorageGB: storageGB})
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			path := filepath.Join(out, name+"-k8s.yaml")
			if err := atomicfile.WriteFile(path, text, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (active: ConfigMap, claim, Job, Service; passive: ConfigMap, claim, Job)\n", path)
			return nil
		},
	}
	f := k8s.Flags()
	f.StringVar(&name, "name", "", "prefix of every object (lower-case DNS label)")
	f.StringVar(&image, "image", "", "the splitguard image (built from the repository's Dockerfile)")
	f.StringVar(&activeCfg, "active-config", "", "the active party's config file (splitguard active --config)")
	f.StringVar(&passiveCfg, "passive-config", "", "the passive party's config file (splitguard passive --config)")
	f.StringVar(&addr, "active-addr", "", "address the passive party dials (default NAME-active:7443)")
	f.StringVar(&out, "out", "", "directory to write the manifests into")
	f.IntVar(&cpus, "cpus", 2, "CPUs per party")
	f.IntVar(&memMB, "memory-mb", 8192, "memory per party in MiB")
	f.IntVar(&storageGB, "storage-gb", 50, "size of each party's volume claim in GiB")
	cmd.AddCommand(k8s)
	return cmd
}
