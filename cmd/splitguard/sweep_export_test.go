package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// TestExportedCommandLines writes the Kubernetes manifests with the CLI and
// checks that every container's command line is one the CLI accepts: the
// flags parse with the real commands.
func TestExportedCommandLines(t *testing.T) {
	needBinary(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("data: /data/a.txt\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("data: /data/p.txt\n"), 0o644)
	sg(t, dir, "deploy", "k8s", "--name", "crit", "--active-config", "a.yaml", "--passive-config", "p.yaml", "--image", "img:1", "--out", "m")
	spec, _ := filepath.Abs(filepath.Join("..", "..", "experiments", "quick.yaml"))
	out := sg(t, dir, "sweep", "export", "--k8s", spec, "--out", "m", "--image", "img:1", "--shards", "3")
	if !strings.Contains(out, "9 runs in 3 shards") {
		t.Errorf("export said %q", out)
	}
	commands := map[string]func() *cobra.Command{"active": newActiveCmd, "passive": newPassiveCmd, "sweep": newSweepCmd}
	seen := map[string]bool{}
	for _, file := range []string{"m/crit-k8s.yaml", "m/sweep-k8s.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc struct {
				Kind string
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Command, Args []string
							}
						}
					}
				}
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if doc.Kind != "Job" {
				continue
			}
			c := doc.Spec.Template.Spec.Containers[0]
			if len(c.Command) != 1 || c.Command[0] != "splitguard" || len(c.Args) == 0 {
				t.Fatalf("%s: command %v %v", file, c.Command, c.Args)
			}
			mk, ok := commands[c.Args[0]]
			if !ok {
				t.Fatalf("%s: unknown command %q", file, c.Args[0])
			}
			seen[c.Args[0]] = true
			if err := mk().ParseFlags(c.Args[1:]); err != nil {
				t.Errorf("%s: splitguard %s: %v", file, strings.Join(c.Args, " "), err)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("commands seen %v", seen)
	}
}
