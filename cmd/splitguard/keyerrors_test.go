package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/netrun"
	"github.com/splitguard/splitguard/protect"
)

// TestLibraryRefusalsAreKeyErrors: each library refusal that names a
// configuration key as "key NAME" carries it as a config.KeyError (found
// by errors.As and config.KeysOf, never by reading the text), and the
// command line's text names the flag instead of the key.
func TestLibraryRefusalsAreKeyErrors(t *testing.T) {
	dir := t.TempDir()
	headerless := filepath.Join(dir, "headerless.csv")
	if err := os.WriteFile(headerless, []byte("1,2,3\n4,5,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	netCfg := func(edit func(*netrun.Config)) func() error {
		return func() error {
			c := netrun.Default()
			c.Data, c.Out, c.Addr, c.InsecureLoopback = headerless, t.TempDir(), "127.0.0.1:0", true
			edit(&c)
			_, err := netrun.RunActive(context.Background(), c, netrun.Options{})
			return err
		}
	}
	runCfg := func(edit func(*config.Config)) func() error {
		return func() error {
			c := config.Default()
			c.SynthRows, c.Out = 100, t.TempDir()
			edit(&c)
			return c.Validate()
		}
	}
	for _, tc := range []struct {
		name string
		err  func() error
		key  string
	}{
		{"netrun address", netCfg(func(c *netrun.Config) { c.Addr = "" }), "addr"},
		{"netrun peer name", netCfg(func(c *netrun.Config) { c.InsecureLoopback = false }), "peer_name"},
		{"netrun hijack", netCfg(func(c *netrun.Config) { c.Hijack = "x" }), "hijack"},
		{"netrun keep checkpoints", netCfg(func(c *netrun.Config) { c.KeepCheckpoints = 1 }), "keep_checkpoints"},
		{"config local cache", runCfg(func(c *config.Config) { c.LocalCache = -1 }), "local_cache"},
		{"config passive optimizer lr", runCfg(func(c *config.Config) { c.PassiveOptimizerLR = -1 }), "passive_optimizer_lr"},
		{"completion known labels", func() error { _, err := completion.Pick([]uint8{0, 1, 1}, 1, 0, 1); return err }, "known_labels"},
		{"completion class rows", func() error { _, err := completion.Pick([]uint8{0, 0, 0}, 2, 0, 1); return err }, "known_labels"},
		{"protect kdk", func() error { _, err := protect.NewKDk(0.7); return err }, "kdk_eps"},
		{"protect mixup", func() error { _, err := protect.NewMixup(-1, 1); return err }, "mixup_alpha"},
		{"protect cae", func() error { _, err := protect.NewCAE(-1, 1); return err }, "cae_lambda"},
		{"protect peloss", func() error { _, err := protect.NewPELoss(0); return err }, "peloss_alpha"},
		{"protect parameter of another", func() error { return protect.Check("grad_dp", protect.Params{"marvell_s": 1}) }, "marvell_s"},
		{"data negative without positive", func() error {
			_, err := data.Load(headerless, data.Options{Format: data.FormatCSV, LabelCol: "a", Negative: []string{"0"}})
			return err
		}, "positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("no error")
			}
			var ke *config.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("%v: no config.KeyError", err)
			}
			if keys := config.KeysOf(err); !slices.Contains(keys, tc.key) {
				t.Fatalf("%v: keys %v, want %s among them", err, keys, tc.key)
			}
			flag := strings.ReplaceAll(tc.key, "_", "-")
			cmd := &cobra.Command{}
			cmd.Flags().String(flag, "", "")
			text := errorWithFlagNames(cmd, err)
			if !strings.Contains(text, "--"+flag) || regexp.MustCompile(`\bkey `+tc.key+`\b`).MatchString(text) {
				t.Errorf("CLI text %q: want --%s in place of key %s", text, flag, tc.key)
			}
		})
	}
}
