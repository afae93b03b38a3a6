package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSettingOf(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name   string
		cfg    map[string]any
		method string
		param  string
		value  float64
		data   string
	}{
		{"none", map[string]any{"protect": "none", "synth_rows": 200000}, "none", "", nan, "synth 200000"},
		{"empty protect", map[string]any{"data": "/d/train.txt"}, "none", "", nan, "train.txt"},
		{"iso t", map[string]any{"protect": "iso", "iso_t": 9}, "iso", "t=9", 9, "?"},
		{"iso ratio r=3 gives t=9", map[string]any{"protect": "iso", "iso_ratio": 3.0}, "iso", "t=9", 9, "?"},
		{"marvell s", map[string]any{"protect": "marvell", "marvell_s": 0.1}, "marvell", "s=0.1", 0.1, "?"},
		{"marvell target", map[string]any{"protect": "marvell", "marvell_error_bound": 0.3}, "marvell", "L=0.3", 0.3, "?"},
		{"dcor alone", map[string]any{"protect": "none", "dcor_alpha": 0.002}, "dcor", "α=0.002", 0.002, "?"},
		{"marvell + dcor", map[string]any{"protect": "marvell", "marvell_s": 4, "dcor_alpha": 0.005}, "marvell+dcor", "s=4, α=0.005", 4, "?"},
		{"label dp", map[string]any{"protect": "none", "label_dp_eps": "2"}, "label_dp", "ε=2", 2, "?"},
		{"max_norm", map[string]any{"protect": "max_norm"}, "max_norm", "", nan, "?"},
		// Wire options are settings of their own; f32 both ways is none.
		{"wire f32", map[string]any{"protect": "none", "wire_embedding": "f32", "wire_gradient": "f32"}, "none", "", nan, "?"},
		{"wire int8", map[string]any{"protect": "none", "wire_embedding": "int8", "wire_gradient": "int8"}, "none", "wire int8", nan, "?"},
		{"wire int8+EF", map[string]any{"protect": "none", "wire_embedding": "int8", "wire_gradient": "int8", "wire_feedback": true}, "none", "wire int8+EF", nan, "?"},
		{"wire mixed", map[string]any{"protect": "marvell", "marvell_s": 4, "wire_embedding": "bf16", "wire_gradient": "int8"}, "marvell", "s=4, wire bf16/int8", 4, "?"},
		{"wire gradient only", map[string]any{"protect": "none", "wire_gradient": "f16"}, "none", "wire f32/f16", nan, "?"},
		// Schedules that overlap the parties' steps, likewise.
		{"staleness", map[string]any{"protect": "none", "staleness": 2, "local_steps": 1}, "none", "k=2", nan, "?"},
		{"int8, k and Q", map[string]any{"protect": "iso", "iso_t": 9, "wire_embedding": "int8", "wire_gradient": "int8", "staleness": 1, "local_steps": 4}, "iso", "t=9, wire int8, k=1, Q=4", 9, "?"},
		{"staleness with prediction", map[string]any{"protect": "none", "staleness": 4, "staleness_prediction": 2, "wire_embedding": "int8", "wire_gradient": "int8"}, "none", "wire int8, k=4 F=2", nan, "?"},
		{"synchronous", map[string]any{"protect": "none", "staleness": 0, "local_steps": 1}, "none", "", nan, "?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := SettingOf(tc.cfg)
			if s.Method != tc.method || s.Param != tc.param {
				t.Errorf("method/param = %q/%q, want %q/%q", s.Method, s.Param, tc.method, tc.param)
			}
			if !(s.Value == tc.value || math.IsNaN(s.Value) && math.IsNaN(tc.value)) {
				t.Errorf("value = %g, want %g", s.Value, tc.value)
			}
			if s.Dataset != tc.data {
				t.Errorf("dataset = %q, want %q", s.Dataset, tc.data)
			}
		})
	}
	if s := SettingOf(nil); s.Method != "?" {
		t.Errorf("nil config: method %q, want ?", s.Method)
	}
}

func TestSmooth(t *testing.T) {
	// A straight line: every weighted mean point lies on it (closed form:
	// the weighted mean of a + b·x is a + b·(weighted mean x)), edges
	// included.
	var xs, ys []float64
	for i := 999; i >= 0; i-- { // any order
		xs, ys = append(xs, float64(i)), append(ys, 1+2*float64(i))
	}
	sx, sy := smooth(xs, ys, 25, 200)
	if len(sx) != 200 {
		t.Fatalf("%d points, want 200", len(sx))
	}
	for i := range sx {
		if math.Abs(sy[i]-(1+2*sx[i])) > 1e-9 || (i > 0 && sx[i] <= sx[i-1]) {
			t.Fatalf("point %d = (%g, %g), not on y = 1 + 2x or not increasing", i, sx[i], sy[i])
		}
	}
	// Hand-derived: points (−1, 1), (0, 0), (1, 1) and a far one at 10;
	// σ = 1 at the centre 0 weighs them e^−½, 1, e^−½ and 0 (beyond 2σ).
	sx, sy = smooth([]float64{10, -1, 0, 1}, []float64{100, 1, 0, 1}, 1, 12)
	e := math.Exp(-0.5)
	if want := 2 * e / (1 + 2*e); len(sy) < 2 || math.Abs(sx[1]) > 1e-12 || math.Abs(sy[1]-want) > 1e-12 {
		t.Fatalf("smooth at 0 = (%v, %v), want (0, %g)", sx, sy, want)
	}
	// Noise: ±0.3 around 0.5, alternating, over 2000 steps; σ = 2.5% of
	// the span (50 steps). Neighbours nearly cancel: what is left is below
	// 0.3 × (largest weight)/(sum of weights) ≤ 0.3/50.
	xs, ys = nil, nil
	for i := range 2000 {
		xs, ys = append(xs, float64(i)), append(ys, 0.5+0.3*float64(1-2*(i%2)))
	}
	sx, sy, sigma := smoothCurves([][2][]float64{{xs, ys}})
	if sigma != 50 {
		t.Fatalf("σ = %g steps, want 2.5%% of 1999 = 50", sigma)
	}
	for i := range sy {
		if math.Abs(sy[i]-0.5) > 0.3/50 {
			t.Fatalf("smoothed point %d = (%g, %g): more than 0.3/50 from 0.5", i, sx[i], sy[i])
		}
	}
	if x, y := smooth(nil, nil, 5, 10); x != nil || y != nil {
		t.Fatal("smooth of nothing is not empty")
	}
}

func TestMeanAtSteps(t *testing.T) {
	xs, ys := meanAtSteps([][2][]float64{{{10, 20}, {0.7, 0.8}}, {{10, 20, 30}, {0.5, 0.6, 0.9}}})
	want := [][2]float64{{10, 0.6}, {20, 0.7}, {30, 0.9}}
	if len(xs) != len(want) {
		t.Fatalf("%d points, want %d", len(xs), len(want))
	}
	for i, w := range want {
		if xs[i] != w[0] || math.Abs(ys[i]-w[1]) > 1e-12 {
			t.Errorf("point %d = (%g, %g), want (%g, %g)", i, xs[i], ys[i], w[0], w[1])
		}
	}
}

func TestLeakKeysOrder(t *testing.T) {
	r := &Run{Summary: &Summary{Leak: map[string]LeakStat{
		"norm/first": {}, "norm/cut": {}, "cosine/cut": {}, "norm/2": {}, "hint5_inner/3": {}, "spectral/first": {},
	}}}
	got := strings.Join(leakKeys([]*Run{r}), " ")
	want := "norm/cut cosine/cut norm/first spectral/first norm/2 hint5_inner/3"
	if got != want {
		t.Errorf("leakKeys = %q, want %q", got, want)
	}
}

func TestReadJSONL(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		n          int
		err        string
	}{
		{"nulls", `{"step":1,"leak":{"norm/cut":null,"cosine/cut":0.7}}` + "\n" + `{"step":2,"leak":{}}` + "\n", 2, ""},
		{"partial last line", `{"step":1,"leak":{}}` + "\n" + `{"step":2,"le`, 1, ""},
		{"blank lines", "\n" + `{"step":1}` + "\n\n", 1, ""},
		{"malformed", `{"step":1}` + "\n" + `{"step":"x"}` + "\n", 1, "batches.jsonl line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "batches.jsonl")
			writeFile(t, p, tc.text)
			got, err := readJSONL[Batch](p)
			if len(got) != tc.n {
				t.Errorf("%d records, want %d", len(got), tc.n)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	p := filepath.Join(dir, "batches.jsonl")
	writeFile(t, p, `{"step":3,"leak":{"norm/cut":null,"cosine/cut":0.25}}`+"\n")
	got, _ := readJSONL[Batch](p)
	if got[0].Leak["norm/cut"] != nil || *got[0].Leak["cosine/cut"] != 0.25 {
		t.Errorf("leak = %v, want norm/cut nil and cosine/cut 0.25", got[0].Leak)
	}
}

func TestLoadSweep(t *testing.T) {
	dir := t.TempDir()
	writeFakeSweep(t, dir, 60)
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !set.Sweep || len(set.Runs) != 10 {
		t.Fatalf("sweep %v with %d runs, want a sweep of 10", set.Sweep, len(set.Runs))
	}
	gs := groups(set.Runs)
	var labels []string
	for _, g := range gs {
		labels = append(labels, g.Setting.Label())
	}
	want := "none|iso t=1|iso t=9|iso t=100|max_norm|marvell s=0.1|marvell s=1|marvell s=4|dcor α=0.005"
	if got := strings.Join(labels, "|"); got != want {
		t.Errorf("settings %q, want %q", got, want)
	}
	for _, g := range gs {
		if g.Setting.Param == "s=1" && len(g.Runs) != 2 {
			t.Errorf("marvell s=1 has %d runs, want 2 seeds", len(g.Runs))
		}
	}
	var failed *Run
	for _, r := range set.Runs {
		if r.Name == "iso-t100-s1" {
			failed = r
		}
	}
	if failed == nil || failed.Status != "failed: exit status 2" || failed.Summary != nil {
		t.Errorf("failed run = %+v, want status from results.csv and no summary", failed)
	}
	// mean over the two seeds of marvell s=1
	for _, g := range gs {
		if g.Setting.Param == "s=1" {
			v, ok := stat(g.Runs, func(s *Summary) *float64 { return s.TestAUCBest })
			if !ok || math.Abs(v-0.770) > 1e-12 {
				t.Errorf("mean best AUC %g, want 0.770", v)
			}
		}
	}
}

func TestGenerateSweep(t *testing.T) {
	dir := t.TempDir()
	writeFakeSweep(t, dir, 400)
	index, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{
		"tradeoff_norm_cut", "leak_norm_cut", "leak_cosine_first", "layers", "marvell_marvell_s_1", "utility",
		`id="runs-table"`, "iso-t100-s1", "failed: exit status 2", "data:image/png;base64,",
		"hint1_inner/cut q95", // all-null leak key: a column of dashes
		"norm/cut chance", chanceCell(t, filepath.Join(dir, "none-s1")), "chance is what a score independent of the labels would give",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script src", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html is not self-contained: contains %q", bad)
		}
	}
	for _, f := range []string{"tradeoff_norm_cut", "leak_norm_cut", "layers", "utility", "marvell_marvell_s_0.1"} {
		for _, ext := range []string{".png", ".svg"} {
			st, err := os.Stat(filepath.Join(dir, "report", f+ext))
			if err != nil || st.Size() < 1000 {
				t.Errorf("%s%s: %v (size %v)", f, ext, err, st)
			}
		}
	}
	_, runsTable, _ := strings.Cut(page, `id="runs-table"`)
	if got := strings.Count(runsTable, "<tr>"); got != 11 { // header + 10 runs
		t.Errorf("%d table rows, want 11", got)
	}
	_, ranking, _ := strings.Cut(page, `id="dcs"`)
	ranking, _, _ = strings.Cut(ranking, "</section>")
	if !strings.Contains(ranking, "T-DCS") || strings.Count(ranking, "<tr>") < 3 {
		t.Errorf("no DCS ranking of the settings in index.html:\n%s", ranking)
	}
}

func TestGenerateSingleRunWithMissingFiles(t *testing.T) {
	dir := t.TempDir()
	writeFakeRun(t, dir, fakeRun{name: "x", config: "synth_rows: 1000\nprotect: marvell\nmarvell_s: 4\nseed: 3\n",
		leak: 0.6, auc: 0.7, steps: 300, marvell: true, noEval: true})
	index, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(index)
	for _, want := range []string{"eval.jsonl: missing", "No evaluation found", "leak_norm_cut", "marvell_marvell_s_4", "q95 |AUC−½| norm/cut"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html lacks %q", want)
		}
	}

	// A run directory with only a config (a run that just started).
	dir2 := t.TempDir()
	writeFile(t, filepath.Join(dir2, "config.yaml"), "protect: none\n")
	index, err = Write(dir2)
	if err != nil {
		t.Fatal(err)
	}
	page, _ = os.ReadFile(index)
	for _, want := range []string{"summary.json: missing", "batches.jsonl: missing", "No per-batch leak AUC"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index.html of an empty run lacks %q", want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing directory: error %v, want one naming it", err)
	}
	empty := t.TempDir()
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "no run directory") {
		t.Errorf("empty directory: error %v", err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "summary.json"), "{not json")
	writeFile(t, filepath.Join(dir, "config.yaml"), "protect: [")
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(set.Runs[0].Notes, "\n")
	if !strings.Contains(notes, "summary.json") || !strings.Contains(notes, "config.yaml") {
		t.Errorf("notes %q, want the broken summary.json and config.yaml named", notes)
	}
	if _, err := Generate(set, filepath.Join(dir, "report")); err != nil {
		t.Errorf("generate with broken files: %v", err)
	}
}

func TestKPIsShowTheChanceFloor(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	r := &Run{Summary: &Summary{TestAUCBest: f(0.8), Leak: map[string]LeakStat{
		"norm/cut":   {Q95Abs: f(0.0581), ChanceQ95Abs: f(0.0409)},
		"cosine/cut": {Q95Abs: f(0.19)}, // a summary from before the chance floor existed
		"norm/first": {Q95Abs: f(0.05), ChanceQ95Abs: f(0.04)},
	}}}
	got := map[string]string{}
	for _, k := range kpis(r, []string{"cosine/cut", "norm/cut", "norm/first"}) {
		got[k.Name] = k.Value
	}
	for name, want := range map[string]string{
		"q95 |AUC−½| norm/cut":   "0.058 (chance 0.041)",
		"q95 |AUC−½| cosine/cut": "0.190",
	} {
		if got[name] != want {
			t.Errorf("KPI %q = %q, want %q", name, got[name], want)
		}
	}
	if _, ok := got["q95 |AUC−½| norm/first"]; ok {
		t.Error("KPIs list a layer other than the cut")
	}
}

// chanceCell is the table cell of the chance floor of norm/cut that the
// run in dir recorded in its summary.json, to four decimals.
func chanceCell(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Leak map[string]struct {
			Chance *float64 `json:"chance_q95_abs"`
		} `json:"leak"`
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	c := sum.Leak["norm/cut"].Chance
	if c == nil || *c <= 0 || *c >= 0.5 {
		t.Fatalf("%s: norm/cut chance %v, want one in (0, ½)", dir, c)
	}
	return fmt.Sprintf(">%.4f<", *c)
}
