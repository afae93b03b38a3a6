package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

// TestMarshalNamesEngineAndRoundTrips checks that config.yaml says which
// matrix engine computed the run, and that the comment does not stop the
// file from being read back to the same configuration.
func TestMarshalNamesEngineAndRoundTrips(t *testing.T) {
	c := Default()
	c.Epochs, c.Batch, c.Seed = 3, 256, 9
	b, err := Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if want := "# matrix engine: " + tensor.Default.Name(); first != want {
		t.Fatalf("first line %q, want %q", first, want)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadYAML(path, Default())
	if err != nil {
		t.Fatal(err)
	}
	if got.Epochs != 3 || got.Batch != 256 || got.Seed != 9 {
		t.Fatalf("read back epochs %d batch %d seed %d, want 3 256 9", got.Epochs, got.Batch, got.Seed)
	}
}
