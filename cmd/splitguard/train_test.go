package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
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
	fromFlags := config.Default()
	fromFlags.Batch, fromFlags.Attacks, fromFlags.Out = 256, []string{"spectral"}, "x"
	got, err := resolveConfig(cmd.Flags(), path, fromFlags)
	if err != nil {
		t.Fatal(err)
	}
	if got.Batch != 256 || !slices.Equal(got.Attacks, []string{"spectral"}) || got.Out != "x" {
		t.Fatalf("flags did not win: batch %d attacks %v out %q", got.Batch, got.Attacks, got.Out)
	}
	if got.Protect != "marvell" || got.Params["marvell_s"] != 4 || got.Epochs != 3 {
		t.Fatalf("file values lost: protect %q s %v epochs %d", got.Protect, got.Params["marvell_s"], got.Epochs)
	}
	if got.LR != config.Default().LR {
		t.Fatalf("a key in neither kept %v, want the default %v", got.LR, config.Default().LR)
	}
}

func TestProtectLabel(t *testing.T) {
	for _, tc := range []struct {
		c    config.Config
		want string
	}{
		{config.Config{Protect: "none"}, "none"},
		{config.Config{Protect: "marvell", Params: protect.Params{"marvell_s": 4}}, "marvell s=4"},
		{config.Config{Protect: "marvell", Params: protect.Params{"marvell_error_bound": 0.3}}, "marvell L=0.3"},
		{config.Config{Protect: "iso", Params: protect.Params{"iso_ratio": 3}}, "iso t=9"},
		{config.Config{Protect: "max_norm", Params: protect.Params{"dcor_alpha": 0.005, "label_dp_eps": 1}}, "max_norm + dcor α=0.005 + label_dp ε=1"},
	} {
		if got := tc.c.Legend().Text; got != tc.want {
			t.Errorf("Legend(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}
