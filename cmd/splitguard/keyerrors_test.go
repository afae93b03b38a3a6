package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/netrun"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/sweep"
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
		{"transport wire encodings differ", wireMismatch(t, func(c *netrun.Config) { c.WireGradient = "int8" }), "wire_gradient"},
		{"transport wire compressions differ", wireMismatch(t, func(c *netrun.Config) { c.WireCompression = "zstd" }), "wire_compression"},
		{"sweep resources", func() error {
			_, err := sweep.ParseSpec([]byte("resources: {cpus: -1}\ngrid: [{protect: none}]\n"), "s.yaml")
			return err
		}, "resources.cpus"},
		{"sweep grid empty list", sweepExpand(t, "grid: [{protect: iso, iso_t: []}]\n"), "iso_t"},
		{"sweep grid no value", sweepExpand(t, "grid: [{protect}]\n"), "protect"},
		{"data every row bad, the first naming a key", func() error {
			_, err := data.Load(writeFile(t, "a,b\n1,x\n0,y\n"), data.Options{Format: data.FormatCSV, LabelCol: "a", Dense: []string{"b"}, SkipBadRows: true})
			return err
		}, "categorical"},
		{"data format sniffed", func() error {
			_, err := data.Load(writeFile(t, "0\t1"+strings.Repeat("\t", 38)+"\n"), data.Options{Format: data.FormatCSV, LabelCol: "y"})
			return err
		}, "format"},
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

// writeFile writes text to a file of its own and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wireMismatch returns a two-party run over loopback whose parties
// disagree on a wire setting (edit sets it on the active): the passive's
// error.
func wireMismatch(t *testing.T, edit func(*netrun.Config)) func() error {
	return func() error {
		var b bytes.Buffer
		if err := data.WriteSynth(&b, 200, 0.3, 1); err != nil {
			t.Fatal(err)
		}
		table := filepath.Join(t.TempDir(), "s.tsv")
		if err := os.WriteFile(table, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		act, pas := netrun.Default(), netrun.Default()
		for i, c := range []*netrun.Config{&act, &pas} {
			c.Data, c.Out, c.InsecureLoopback, c.Epochs = table, filepath.Join(t.TempDir(), fmt.Sprint(i)), true, 1
			c.PeerTimeout = 20 * time.Second
		}
		act.Addr = "127.0.0.1:0"
		edit(&act)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		addr, done := make(chan string, 1), make(chan error, 1)
		go func() {
			_, err := netrun.RunActive(ctx, act, netrun.Options{Ready: func(a string) { addr <- a }})
			done <- err
		}()
		select {
		case pas.Addr = <-addr:
		case err := <-done:
			t.Fatalf("active: %v", err)
		}
		_, err := netrun.RunPassive(ctx, pas, netrun.Options{})
		cancel()
		<-done
		return err
	}
}

// sweepExpand returns the expansion of the sweep file src: its error.
func sweepExpand(t *testing.T, src string) func() error {
	return func() error {
		spec, err := sweep.ParseSpec([]byte(src), "s.yaml")
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		_, err = spec.Expand()
		return err
	}
}

// TestLibraryWarningsNameFlags: the warnings that name configuration keys
// carry them (config.Warning), and the command line prints the flags in
// their place: the batch warnings, and a summary's warning about the
// learning rate as train prints it.
func TestLibraryWarningsNameFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    config.Warning
		flag string
	}{
		{"batch larger than the training rows", config.BatchWarning(1024, 400, 1), "--batch"},
		{"too few positives per batch", config.PositivesWarning(64, 0.02), "--batch"},
	} {
		if tc.w.Text == "" || len(tc.w.Keys) == 0 {
			t.Fatalf("%s: warning %+v, want text and keys", tc.name, tc.w)
		}
		if got := withFlagNames(newTrainCmd(), tc.w.Text, tc.w.Keys); !strings.Contains(got, tc.flag) || strings.Contains(got, "key ") {
			t.Errorf("%s: %q, want %s in place of the key", tc.name, got, tc.flag)
		}
	}
	s := &rundir.Summary{Warnings: []string{"the loss did not fall: try another learning rate (key lr)"},
		WarningKeys: map[string][]string{"the loss did not fall: try another learning rate (key lr)": {"lr"}}}
	var b strings.Builder
	printSelection(&b, s)
	if out := b.String(); !strings.Contains(out, "warning: the loss did not fall: try another learning rate (--lr)") {
		t.Errorf("train printed %q, want the warning naming --lr", out)
	}
}
