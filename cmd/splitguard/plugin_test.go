package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/report/theme"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/ui"
)

// testCLIEnv makes the test binary act as the splitguard CLI (TestMain).
const testCLIEnv = "SPLITGUARD_TEST_CLI"

// A protection with two parameters and an attack that needs the oracle,
// each registered from this test file alone — the whole of what adding
// one takes. TestPluginsFromOneFile checks that the CLI, config.yaml, a
// sweep and the report pick them up.
func init() {
	protect.Register(protect.Spec{Name: "toy_scale", Help: "scales the gradient (a test plug-in)",
		Color: toyColor, Rank: 2, // with iso (after it by name), before max_norm in the report
		Params: []protect.Param{
			{Key: "toy_scale_gain", Symbol: "gain", Help: "toy_scale: factor", Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "toy_scale_floor", Symbol: "floor", Help: "toy_scale: added constant", Min: 0, Max: 1},
		},
		New: func(p protect.Params) (protect.Protector, error) {
			return toyScale{gain: p.Get("toy_scale_gain"), floor: float32(p.Get("toy_scale_floor"))}, nil
		}})
	attack.Register("toy_oracle", func() attack.Attack { return toyOracle{} })
}

// toyColor is toy_scale's colour (teal), in no palette of report/theme.
const toyColor = 0x01665e

type toyScale struct {
	gain  float64
	floor float32
}

func (toyScale) Name() string { return "toy_scale" }

func (t toyScale) Protect(b *protect.Batch, out *tensor.Matrix, _ *rand.Rand) (protect.Stats, error) {
	out.Resize(b.Grad.Rows, b.Grad.Cols)
	for i, v := range b.Grad.Data {
		out.Data[i] = float32(t.gain)*v + t.floor
	}
	return protect.Stats{"toy_gain": t.gain}, nil
}

// toyOracle scores a row by its inner product with the oracle.
type toyOracle struct{}

func (toyOracle) Name() string { return "toy_oracle" }

func (toyOracle) Needs() attack.Needs { return attack.Needs{Input: attack.Gradient, Oracle: true} }

func (toyOracle) Score(obs *attack.Observation, scores []float64, scored []bool) error {
	if obs.Oracle == nil {
		return fmt.Errorf("no oracle")
	}
	for i := range scores {
		var s float64
		for j, v := range obs.X.Row(i) {
			s += float64(v) * float64(obs.Oracle[j])
		}
		scores[i], scored[i] = s, true
	}
	return nil
}

func TestPluginsFromOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep of child processes")
	}
	// CLI help: the protection, its flags and the attack.
	var help bytes.Buffer
	root := newRootCmd()
	root.SetOut(&help)
	root.SetArgs([]string{"train", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"toy_scale", "--toy-scale-gain", "--toy-scale-floor", "toy_oracle", "[0, 1]"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("train --help does not mention %q", want)
		}
	}
	// A parameter out of its registered range is refused by the flag.
	root = newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"train", "--protect", "toy_scale", "--toy-scale-floor", "2", "--synth-rows", "100", "--out", t.TempDir()})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "toy_scale_floor") {
		t.Errorf("--toy-scale-floor 2 (outside [0, 1]): err %v", err)
	}

	// A sweep over the toy's parameter, run by child processes of this
	// test binary (which has the plug-ins registered).
	t.Setenv(testCLIEnv, "1")
	dir := t.TempDir()
	spec := filepath.Join(dir, "sweep.yaml")
	os.WriteFile(spec, []byte(`base: {synth_rows: 3000, epochs: 1, batch: 256, layers: [16, 16], cut: 1, lr: 0.003, eval_every: 0, attacks: [norm, toy_oracle]}
grid:
  - {protect: toy_scale, toy_scale_gain: [0.5, 2], toy_scale_floor: 0.25}
`), 0o644)
	out := filepath.Join(dir, "out")
	root = newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"sweep", spec, "--out", out, "--jobs", "1"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 3 {
		t.Fatalf("results.csv: %d rows, err %v", len(rows), err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	gain, leak := col("cfg.toy_scale_gain"), col("leak.toy_oracle/cut.q95")
	if gain < 0 || leak < 0 {
		t.Fatalf("results.csv lacks the toy's columns: %v", rows[0])
	}
	var gains []string
	for _, r := range rows[1:] {
		gains = append(gains, r[gain])
		if r[leak] == "" {
			t.Errorf("run with gain %s: no toy_oracle leak", r[gain])
		}
	}
	slices.Sort(gains)
	if !slices.Equal(gains, []string{"0.5", "2"}) {
		t.Errorf("gains %v, want 0.5 and 2", gains)
	}
	// Each run's config.yaml keeps the parameters as keys.
	configs, _ := filepath.Glob(filepath.Join(out, "*", "config.yaml"))
	if len(configs) != 2 {
		t.Fatalf("%d config.yaml files, want 2", len(configs))
	}
	for _, c := range configs {
		raw, _ := os.ReadFile(c)
		if !strings.Contains(string(raw), "toy_scale_floor: 0.25") {
			t.Errorf("%s lacks toy_scale_floor:\n%s", c, raw)
		}
	}
	// The report names the runs by the registry's legend.
	root = newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetArgs([]string{"report", out})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "report", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gain=0.5, floor=0.25", "gain=2, floor=0.25", "toy_oracle", "background:" + theme.Hex(theme.RGB(toyColor))} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the report does not mention %q", want)
		}
	}
	// Its colour joins a legible palette and the live page's.
	if err := theme.PaletteOf(protect.Colors()).Check(); err != nil {
		t.Errorf("the palette with toy_scale:\n%v", err)
	}
	srv := httptest.NewServer(ui.NewFeed(ui.Info{Title: "t", Method: "toy_scale"}).Handler())
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if want := fmt.Sprintf("%q:%q", "toy_scale", theme.Hex(theme.RGB(toyColor))); !strings.Contains(string(live), want) {
		t.Errorf("the live page's colours lack %s", want)
	}
}
