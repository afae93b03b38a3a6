package run

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

var (
	passiveCols = []string{"I1", "I2", "I3", "I4", "I5", "I6", "C1", "C2", "C3"}
	activeCols  = []string{"I7", "I8", "I9", "I10", "I11", "I12", "I13", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11", "C12",
		"C13", "C14", "C15", "C16", "C17", "C18", "C19", "C20", "C21", "C22", "C23", "C24", "C25", "C26"}
)

// TestVerticalSplitMatchesPartyLoads checks that the in-process split of
// the columns gives each party exactly the table a two-party run's party
// loads from the same file with its column list (data.Options.Columns, as
// netrun does), for either list given alone or both.
func TestVerticalSplitMatchesPartyLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "synth.tsv")
	var buf bytes.Buffer
	if err := data.WriteSynth(&buf, 3000, 0.25, 5); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Data, cfg.Format = path, data.FormatCriteo
	cfg.Resolve()
	all, err := data.Load(path, cfg.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	load := func(cols []string) *data.Features {
		o := cfg.DataOptions()
		o.Columns, o.NoLabel = cols, true
		s, err := data.Load(path, o)
		if err != nil {
			t.Fatal(err)
		}
		return s.Train.X
	}
	wantP, wantA := load(passiveCols), load(activeCols)
	for _, tc := range []struct {
		name     string
		pas, act []string
	}{{"both lists", passiveCols, activeCols}, {"passive list", passiveCols, nil}, {"active list", nil, activeCols}} {
		c := cfg
		c.PassiveColumns, c.ActiveColumns = tc.pas, tc.act
		px, ax, err := c.SplitFeatures(all.Train.X)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, p := range []struct {
			who       string
			got, want *data.Features
		}{{"passive", px, wantP}, {"active", ax, wantA}} {
			if !slices.Equal(p.got.ColumnNames(), p.want.ColumnNames()) || !slices.Equal(p.got.Cat, p.want.Cat) ||
				!slices.Equal(p.got.Dense, p.want.Dense) || !slices.Equal(p.got.Cardinality, p.want.Cardinality) {
				t.Errorf("%s: the %s party's columns %v differ from its own load's %v", tc.name, p.who, p.got.ColumnNames(), p.want.ColumnNames())
			}
		}
	}
	bad := cfg
	bad.PassiveColumns = []string{"I1", "nope"}
	if _, _, err := bad.SplitFeatures(all.Train.X); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown column: error %v, want one naming it", err)
	}
	bad.PassiveColumns, bad.ActiveColumns, bad.Out, bad.SynthRows = []string{"I1"}, []string{"I1"}, "x", 10
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "both parties") {
		t.Errorf("a column given to both parties: error %v, want a refusal", err)
	}
}

// TestVerticalSplitWideReadsNoPassiveColumn checks that under a split the
// active party's top reads nothing of the passive's columns: changing
// every passive column leaves the active's features, and so its logits
// for the same embedding, unchanged; and the top refuses the full table.
func TestVerticalSplitWideReadsNoPassiveColumn(t *testing.T) {
	cfg := config.Default()
	cfg.SynthRows, cfg.Layers, cfg.Cut = 2000, []int{16, 16}, 1
	cfg.PassiveColumns = passiveCols
	cfg.Resolve()
	split, err := cfg.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	x := split.Train.X
	bottom, top, wide, err := cfg.BuildModels(x)
	if err != nil || !wide {
		t.Fatalf("wide %t, err %v", wide, err)
	}
	// A copy of the table whose passive columns all hold other values.
	y := *x
	y.Cat, y.Dense = slices.Clone(x.Cat), slices.Clone(x.Dense)
	for r := 0; r < x.Rows; r++ {
		for j, n := range x.CatNames {
			if slices.Contains(passiveCols, n) {
				y.Cat[r*x.NumCat+j] = int32((int(x.Cat[r*x.NumCat+j]) + 1) % x.Cardinality[j])
			}
		}
		for j, n := range x.DenseNames {
			if slices.Contains(passiveCols, n) {
				y.Dense[r*x.NumDense+j] = 1 - x.Dense[r*x.NumDense+j]
			}
		}
	}
	logits := func(f *data.Features) []float32 {
		_, ax, err := cfg.SplitFeatures(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ax.ColumnNames() {
			if slices.Contains(passiveCols, n) {
				t.Fatalf("the active party's features hold the passive column %s", n)
			}
		}
		var b data.Batch
		ax.Gather([]int{0, 1, 2, 3}, &b)
		e := tensor.New(4, bottom.CutDim())
		for i := range e.Data {
			e.Data[i] = float32(i%7) / 7
		}
		out, err := top.Forward(e, &b)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(out)
	}
	if a, b := logits(x), logits(&y); !slices.Equal(a, b) {
		t.Fatalf("the logits moved with the passive columns: %v, then %v", a, b)
	}
	var full data.Batch
	x.Gather([]int{0, 1}, &full)
	if _, err := top.Forward(tensor.New(2, bottom.CutDim()), &full); err == nil {
		t.Fatal("the top accepted the full table's columns")
	}
}

// TestVerticalSplitRun runs in process with a split and the linear
// feature attack: config.yaml records the split, the baseline reads the
// active's own columns, and eval.jsonl and summary.json hold the
// reconstruction figures of exactly the passive's columns.
func TestVerticalSplitRun(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs, cfg.MaxSteps, cfg.EvalEvery, cfg.Attacks = 1, 20, 0, []string{"norm"}
	cfg.PassiveColumns, cfg.FeatureAttacks, cfg.FeatureAux = passiveCols, []string{"inverse_linear"}, 500
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, b, err := completion.LoadRun(cfg.Out); err != nil || b.CutDim() != cfg.Layers[cfg.Cut-1] {
		t.Errorf("the split run's bottom does not load for an offline attack: %v", err)
	}
	// The plan's reload scores the validation rows under the split (the
	// bottom on the passive's columns, the wide part on the active's) as
	// the run's evaluation did.
	if vs, err := ValidationScores(cfg.Out); err != nil || sum.ValAUCSelected == nil {
		t.Errorf("validation scores of the split run: %v (val AUC %v)", err, sum.ValAUCSelected)
	} else if a, _ := metrics.AUC(vs.Scores, vs.Labels, nil); math.Abs(a-*sum.ValAUCSelected) > 1e-9 {
		t.Errorf("the split run's reloaded validation AUC %v, recorded %v", a, *sum.ValAUCSelected)
	}
	yml, err := os.ReadFile(filepath.Join(cfg.Out, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(yml), "passive_columns: [I1, I2, I3, I4, I5, I6, C1, C2, C3]") || !strings.Contains(string(yml), "feature_attacks: [inverse_linear]") {
		t.Errorf("config.yaml does not record the split and the feature attack:\n%s", yml)
	}
	if sum.Baseline == nil || sum.Baseline.Columns != baselineOwn {
		t.Errorf("baseline %+v, want one on the active party's own columns", sum.Baseline)
	}
	evals := readLines(t, filepath.Join(cfg.Out, "eval.jsonl"))
	if len(evals) == 0 {
		t.Fatal("no evaluation")
	}
	figs, _ := evals[len(evals)-1]["features"].(map[string]any)
	for _, n := range passiveCols {
		kind := "r2"
		if n[0] == 'C' {
			kind = "acc"
		}
		if _, ok := figs["inverse_linear/"+kind+"/"+n]; !ok {
			t.Errorf("no figure for the passive column %s in %v", n, figs)
		}
	}
	for k := range figs {
		for _, n := range activeCols {
			if strings.HasSuffix(k, "/"+n) {
				t.Errorf("a figure %s for the active's own column", k)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Sel   map[string]float64 `json:"feature_leak_selected"`
		Final map[string]float64 `json:"feature_leak_final"`
		Best  map[string]float64 `json:"feature_leak_best"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Final["inverse_linear/r2_mean"]; !ok {
		t.Errorf("summary.json's feature_leak_final has no r2_mean: %v", s.Final)
	}
	if _, ok := s.Sel["inverse_linear/r2_mean"]; !ok {
		t.Errorf("summary.json's feature_leak_selected has no r2_mean: %v", s.Sel)
	}
	// Offline, on the saved (selected) bottom: the selected evaluation's
	// figures again.
	off, err := AttackFeatures(cfg.Out, cfg.FeatureAttacks, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(off) != len(s.Sel) {
		t.Errorf("offline: %d figures, the run's selected evaluation %d", len(off), len(s.Sel))
	}
	for k, v := range s.Sel {
		if math.Abs(off[k]-v) > 1e-9 {
			t.Errorf("offline %s = %g, at the run's selected evaluation %g", k, off[k], v)
		}
	}
	if s.Best["inverse_linear/r2_mean"] < s.Final["inverse_linear/r2_mean"] {
		t.Errorf("best r2_mean %g below the final %g", s.Best["inverse_linear/r2_mean"], s.Final["inverse_linear/r2_mean"])
	}
}
