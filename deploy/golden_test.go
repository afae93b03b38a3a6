package deploy

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/internal/golden"
	"github.com/splitguard/splitguard/sweep"
)

// TestGolden compares every manifest this package writes with
// testdata/NAME.golden, byte for byte (rewrite them with
// `go test ./deploy -run Golden -update` and review the diff). The other
// tests decode the manifests strictly with Kubernetes' types and check
// their meaning; this one catches every change of the text, so that a
// change reaches the reviewer as a diff of the files users apply.
func TestGolden(t *testing.T) {
	spec := []byte("base: {synth_rows: 30000}\ngrid:\n  - {protect: none}\n  - {protect: marvell, marvell_s: [1, 4]}\n")
	cases := []struct {
		name string
		make func() ([]byte, error)
	}{
		{"slurm-array", func() ([]byte, error) {
			s, err := SlurmScript(SweepJob{Name: "splitguard-quick", Exe: "/opt/splitguard/bin/splitguard",
				Spec: "/shared/quick.yaml", Out: "/shared/quick", Dir: "/shared",
				Resources: sweep.Resources{Shards: 3, Jobs: 2, CPUs: 4, MemoryMB: 4096, TimeMinutes: 60, Partition: "cpu"}})
			return []byte(s), err
		}},
		{"slurm-array-default-partition", func() ([]byte, error) {
			s, err := SlurmScript(SweepJob{Name: "splitguard-one", Exe: "/usr/local/bin/splitguard",
				Spec: "/home/u/s.yaml", Out: "/home/u/out", Dir: "/home/u",
				Resources: sweep.Resources{Shards: 1, Jobs: 1, CPUs: 1, MemoryMB: 1024, TimeMinutes: 10}})
			return []byte(s), err
		}},
		{"k8s-sweep", func() ([]byte, error) {
			return K8sSweepManifests(K8sSweep{Name: "splitguard-quick", Image: "registry.example/splitguard:v1", SpecText: spec,
				Resources: sweep.Resources{Shards: 3, Jobs: 2, CPUs: 4, MemoryMB: 3000, TimeMinutes: 90, StorageGB: 7}, StorageClass: "nfs"})
		}},
		{"k8s-sweep-default-storage", func() ([]byte, error) {
			return K8sSweepManifests(K8sSweep{Name: "one", Image: "splitguard:dev", SpecText: spec,
				Resources: sweep.Resources{Shards: 1, Jobs: 1, CPUs: 1, MemoryMB: 512, TimeMinutes: 5, StorageGB: 1}})
		}},
		{"k8s-two-party", func() ([]byte, error) {
			return K8sTrainingManifests(K8sTraining{Name: "criteo", Image: "registry.example/splitguard:v1",
				ActiveConfig:  []byte("data: /data/active.txt\nprotect: marvell\nmarvell_s: 4\ncheckpoint_every: 100\n"),
				PassiveConfig: []byte("data: /data/passive.txt\ncheckpoint_every: 100\n"),
				CPUs:          8, MemoryMB: 16384, StorageGB: 50})
		}},
		{"k8s-two-party-external-active", func() ([]byte, error) {
			return K8sTrainingManifests(K8sTraining{Name: "churn", Image: "splitguard:dev",
				ActiveConfig: []byte("data: /data/a.csv\n"), PassiveConfig: []byte("data: /data/p.csv\n"),
				ActiveAddr: "active.example.org:7443"})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.make()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(c.name, "k8s-") {
				decodeAll(t, got) // the golden text is what Kubernetes accepts
			}
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), got)
		})
	}
}
