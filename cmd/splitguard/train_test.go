package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/run"
)

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte("batch: 512\nprotect: marvell\nmarvell_s: 4\nattacks: [norm, cosine]\nepochs: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newTrainCmd()
	if err := cmd.ParseFlags([]string{"--config", path, "--batch", "256", "--attacks", "spectral", "--out", "x"}); err != nil {
		t.Fatal(err)
	}
	// What the flags parsed into (defaults plus the two flags) is what
	// resolveConfig receives as fromFlags.
	fromFlags := run.Default()
	fromFlags.Batch, fromFlags.Attacks, fromFlags.Out = 256, []string{"spectral"}, "x"
	got, err := resolveConfig(cmd.Flags(), path, fromFlags)
	if err != nil {
		t.Fatal(err)
	}
	if got.Batch != 256 || !slices.Equal(got.Attacks, []string{"spectral"}) || got.Out != "x" {
		t.Fatalf("flags did not win: batch %d attacks %v out %q", got.Batch, got.Attacks, got.Out)
	}
	if got.Protect != "marvell" || got.MarvellS != 4 || got.Epochs != 3 {
		t.Fatalf("file values lost: protect %q s %v epochs %d", got.Protect, got.MarvellS, got.Epochs)
	}
	if got.LR != run.Default().LR {
		t.Fatalf("a key in neither kept %v, want the default %v", got.LR, run.Default().LR)
	}
}

func TestProtectLabel(t *testing.T) {
	for _, tc := range []struct {
		c    run.Config
		want string
	}{
		{run.Config{Protect: "none"}, "none"},
		{run.Config{Protect: "marvell", MarvellS: 4}, "marvell s=4"},
		{run.Config{Protect: "marvell", MarvellErrorBound: 0.3}, "marvell L=0.3"},
		{run.Config{Protect: "iso", IsoRatio: 3}, "iso r=3"},
		{run.Config{Protect: "max_norm", DCorAlpha: 0.005, LabelDPEps: 1}, "max_norm + dCor α=0.005 + label DP ε=1"},
	} {
		if got := protectLabel(tc.c); got != tc.want {
			t.Errorf("protectLabel(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
