package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/deploy"
	"github.com/splitguard/splitguard/sweep"
)

// sweepExportOptions are the flags of `sweep export`.
type sweepExportOptions struct {
	out, image, exe, storageClass string
	slurm, k8s                    bool
	shards                        int
	shardsSet                     bool
}

func newSweepExportCmd() *cobra.Command {
	var o sweepExportOptions
	cmd := &cobra.Command{
		Use:   "export (--slurm | --k8s --image IMAGE) CONFIG --out DIR",
		Short: "Write the batch job that runs a sweep's shards on Slurm or Kubernetes",
		Long: `export writes the job that runs the sweep CONFIG into DIR on an existing batch engine, one shard
per task, with the resources of the sweep file's 'resources' section (shards, jobs, cpus, memory_mb,
time_minutes, partition, storage_gb; --shards overrides shards):

  --slurm  DIR/sweep.sbatch: a job array (--array=0-N-1, --requeue), each task running
           'splitguard sweep DIR/.sweep/sweep.yaml --out DIR' with its shard from SLURM_ARRAY_TASK_ID.
           DIR, the sweep file's data and the splitguard executable (--exe, default this one) must be
           on a file system every node sees. Submit with 'sbatch DIR/sweep.sbatch'.
  --k8s    DIR/sweep-k8s.yaml: a ConfigMap with the sweep file, a ReadWriteMany volume claim for the
           sweep directory and an Indexed Job of N completions running the image (--image, built from
           the repository's Dockerfile). Apply with 'kubectl apply -f DIR/sweep-k8s.yaml'; copy the
           results out of the volume afterwards. Data files must be reachable from the pods (on the
           volume, or an image built with them).

A task that is requeued, retried or resubmitted runs only the runs that are not done.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.shardsSet = cmd.Flags().Changed("shards")
			return sweepExport(cmd.OutOrStdout(), args[0], o)
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "sweep directory (the job writes its runs there; the job file is written there too)")
	cmd.Flags().BoolVar(&o.slurm, "slurm", false, "write a Slurm job array (DIR/sweep.sbatch)")
	cmd.Flags().BoolVar(&o.k8s, "k8s", false, "write a Kubernetes Indexed Job and its volume claim (DIR/sweep-k8s.yaml)")
	cmd.Flags().StringVar(&o.image, "image", "", "with --k8s: the splitguard container image")
	cmd.Flags().StringVar(&o.storageClass, "storage-class", "", "with --k8s: storage class of the sweep directory's volume claim (must offer ReadWriteMany)")
	cmd.Flags().StringVar(&o.exe, "exe", "", "with --slurm: the splitguard executable as the nodes see it (default: this one)")
	cmd.Flags().IntVar(&o.shards, "shards", 0, "number of shards (default: the sweep file's resources.shards, else 4, at most the runs)")
	return cmd
}

// sweepExport writes the batch job of the sweep file specPath as o asks
// and tells w where and how to submit it.
func sweepExport(w io.Writer, specPath string, o sweepExportOptions) error {
	if o.slurm == o.k8s {
		return fmt.Errorf("sweep export: give exactly one of --slurm and --k8s")
	}
	if o.out == "" {
		return fmt.Errorf("sweep export: give --out DIR")
	}
	raw, err := os.ReadFile(specPath)
	if err != nil {
		return fmt.Errorf("sweep export: %w", err)
	}
	spec, err := sweep.ParseSpec(raw, specPath)
	if err != nil {
		return err
	}
	runs, err := spec.Expand()
	if err != nil {
		return err
	}
	res := spec.Resources
	if o.shardsSet {
		if o.shards < 1 {
			return fmt.Errorf("sweep export: --shards %d: must be at least 1", o.shards)
		}
		res.Shards = o.shards
	}
	res = res.WithDefaults(len(runs))
	name := deploy.JobName(filepath.Base(specPath))
	if o.k8s {
		return exportK8s(w, o, name, raw, res, len(runs))
	}
	return exportSlurm(w, o, name, raw, res, len(runs))
}

// exportK8s writes DIR/sweep-k8s.yaml, the Kubernetes manifests of the
// sweep file raw (runs runs) in the shards of res.
func exportK8s(w io.Writer, o sweepExportOptions, name string, raw []byte, res sweep.Resources, runs int) error {
	if o.image == "" {
		return fmt.Errorf("sweep export: --k8s needs --image (the image built from the repository's Dockerfile)")
	}
	text, err := deploy.K8sSweepManifests(deploy.K8sSweep{Name: name, Image: o.image, SpecText: raw, Resources: res, StorageClass: o.storageClass})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.out, "sweep-k8s.yaml")
	if err := atomicfile.WriteFile(path, text, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s: %d runs in %d shards; apply with: kubectl apply -f %s\n", path, runs, res.Shards, path)
	return nil
}

// exportSlurm writes DIR/sweep.sbatch, the Slurm job array of the sweep
// file raw (runs runs) in the shards of res, with the copy of the sweep
// file its tasks read and their log directory.
func exportSlurm(w io.Writer, o sweepExportOptions, name string, raw []byte, res sweep.Resources, runs int) error {
	absOut, err := filepath.Abs(o.out)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	exe := o.exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("sweep export: finding this executable: %w (give --exe)", err)
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return err
	}
	// The tasks read a copy of the sweep file kept with the sweep,
	// so that editing the original cannot make shards disagree.
	specCopy := filepath.Join(absOut, sweep.StateDir, "sweep.yaml")
	text, err := deploy.SlurmScript(deploy.SweepJob{Name: name, Exe: exe, Spec: specCopy, Out: absOut, Dir: wd, Resources: res})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(absOut, deploy.SlurmLogDir), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(specCopy, raw, 0o644); err != nil {
		return err
	}
	path := filepath.Join(absOut, "sweep.sbatch")
	if err := atomicfile.WriteFile(path, []byte(text), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s: %d runs in %d array tasks; submit with: sbatch %s\n", path, runs, res.Shards, path)
	return nil
}
