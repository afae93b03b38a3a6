// Package deploy writes what runs splitguard on existing batch engines:
// a Slurm job array (sbatch script) and a Kubernetes Indexed Job for a
// sharded sweep, and Kubernetes manifests for a two-party training run.
// It only writes text; nothing here talks to a cluster.
package deploy

import (
	"fmt"
	"strings"

	"github.com/splitguard/splitguard/sweep"
)

// SweepJob describes a sharded sweep to hand to a batch engine.
type SweepJob struct {
	// Name names the job (Slurm job name, Kubernetes object names).
	Name string
	// Exe is the splitguard executable as the engine's hosts see it.
	Exe string
	// Spec is the sweep file and Out the sweep directory, as the
	// engine's hosts see them (on a shared file system for Slurm).
	Spec, Out string
	// Dir is the working directory of every task (relative data paths in
	// the sweep file are relative to it).
	Dir string
	// Resources per shard (defaults already applied).
	Resources sweep.Resources
}

// SlurmLogDir is where the array tasks' output goes, under the sweep
// directory; it must exist before sbatch (Slurm does not create it).
const SlurmLogDir = ".sweep/slurm"

// SlurmScript writes an sbatch script: a job array of one task per shard,
// each task running `splitguard sweep SPEC --out OUT --jobs J` (its shard
// comes from SLURM_ARRAY_TASK_ID), requeued if its node fails.
func SlurmScript(j SweepJob) (string, error) {
	if err := j.check(); err != nil {
		return "", err
	}
	r := j.Resources
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "# Written by 'splitguard sweep export --slurm': one array task per shard of\n")
	fmt.Fprintf(&b, "# the sweep %s into %s. Submit with: sbatch THIS_FILE\n", j.Spec, j.Out)
	fmt.Fprintf(&b, "# Each task finds its shard in SLURM_ARRAY_TASK_ID; a requeued or resubmitted\n")
	fmt.Fprintf(&b, "# task runs only what is not done. 'splitguard sweep status %s' shows progress.\n", j.Out)
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", j.Name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", r.Shards-1)
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n")
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", r.CPUs)
	fmt.Fprintf(&b, "#SBATCH --mem=%dM\n", r.MemoryMB)
	fmt.Fprintf(&b, "#SBATCH --time=%d\n", r.TimeMinutes)
	if r.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", r.Partition)
	}
	fmt.Fprintf(&b, "#SBATCH --requeue\n")
	fmt.Fprintf(&b, "#SBATCH --chdir=%s\n", j.Dir)
	fmt.Fprintf(&b, "#SBATCH --output=%s/%s/%%A_%%a.out\n", j.Out, SlurmLogDir)
	fmt.Fprintf(&b, "set -euo pipefail\n")
	fmt.Fprintf(&b, "exec %s sweep %s --out %s --jobs %d\n", shellQuote(j.Exe), shellQuote(j.Spec), shellQuote(j.Out), r.Jobs)
	return b.String(), nil
}

func (j SweepJob) check() error {
	if j.Name == "" || !validName(j.Name) {
		return fmt.Errorf("deploy: job name %q: use lower-case letters, digits and '-', starting with a letter, at most 52 characters", j.Name)
	}
	for _, p := range []struct{ what, v string }{{"executable", j.Exe}, {"sweep file", j.Spec}, {"sweep directory", j.Out}, {"working directory", j.Dir}} {
		if p.v == "" {
			return fmt.Errorf("deploy: no %s given", p.what)
		}
		// #SBATCH lines are not shell-parsed: no spaces or newlines.
		if strings.ContainsAny(p.v, " \t\n\r\"'\\") {
			return fmt.Errorf("deploy: the %s %q has spaces, quotes or backslashes, which an #SBATCH line cannot hold", p.what, p.v)
		}
	}
	if j.Resources.Shards < 1 {
		return fmt.Errorf("deploy: %d shards", j.Resources.Shards)
	}
	return nil
}

// validName: a Kubernetes DNS label short enough for generated pod names.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 52 || !(s[0] >= 'a' && s[0] <= 'z') || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// JobName turns a file name into a valid job name ("quick.yaml" →
// "splitguard-quick").
func JobName(base string) string {
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	var b strings.Builder
	b.WriteString("splitguard-")
	for _, c := range strings.ToLower(base) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 52 {
		s = strings.TrimRight(s[:52], "-")
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+=:@", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
