package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// TestDockerfile parses the repository's Dockerfile with BuildKit's own
// parser (the one docker build uses) and checks its stages: a Go build
// stage making a static binary, and a final stage that copies only that
// binary and runs as the non-root user the manifests expect.
func TestDockerfile(t *testing.T) {
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		t.Errorf("parser warning: %s", w.Short)
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(metaArgs) != 0 {
		t.Errorf("global ARGs %v", metaArgs)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want build and runtime", len(stages))
	}
	build, run := stages[0], stages[1]
	if build.Name != "build" || !strings.HasPrefix(build.BaseName, "golang:1.26") {
		t.Errorf("first stage %q from %q, want build from golang:1.26", build.Name, build.BaseName)
	}
	static, built := false, false
	for _, c := range build.Commands {
		switch x := c.(type) {
		case *instructions.EnvCommand:
			for _, kv := range x.Env {
				if kv.Key == "CGO_ENABLED" && kv.Value == "0" {
					static = true
				}
			}
		case *instructions.RunCommand:
			if strings.Contains(strings.Join(x.CmdLine, " "), "go build") && strings.Contains(strings.Join(x.CmdLine, " "), "./cmd/splitguard") {
				built = true
			}
		}
	}
	if !static || !built {
		t.Errorf("build stage: CGO_ENABLED=0 %v, go build ./cmd/splitguard %v", static, built)
	}
	if !strings.Contains(run.BaseName, "static") {
		t.Errorf("runtime base %q: want a static (libc-free) base", run.BaseName)
	}
	var user string
	var entry []string
	for _, c := range run.Commands {
		switch x := c.(type) {
		case *instructions.UserCommand:
			user = x.User
		case *instructions.EntrypointCommand:
			entry = x.CmdLine
		case *instructions.CopyCommand:
			if x.From != "build" {
				t.Errorf("runtime stage copies from %q, want only from the build stage", x.From)
			}
		case *instructions.RunCommand:
			t.Errorf("runtime stage runs %v: a static base has no shell", x.CmdLine)
		}
	}
	if user != "65532:65532" || !strings.HasPrefix(user, "65532") {
		t.Errorf("USER %q, want the non-root 65532 the manifests run as (K8sUID %d)", user, K8sUID)
	}
	if len(entry) != 1 || entry[0] != "splitguard" {
		t.Errorf("ENTRYPOINT %v", entry)
	}
}
