package plan

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/sweep"
	"github.com/splitguard/splitguard/tensor"
)

// toy_plan is a defence registered from this test file alone: it mixes
// the gradient with Gaussian noise, out = (1−m)·g + m·ε. The search must
// pick it up without an edit of package plan.
func init() {
	protect.Register(protect.Spec{Name: "toy_plan", Help: "mixes the gradient with noise (a test plug-in)", Color: 0xc51b7d,
		Params: []protect.Param{{Key: "toy_plan_mix", Symbol: "m", Help: "toy_plan: share of noise", Min: 0, MinOpen: true, Max: 1}},
		New: func(p protect.Params) (protect.Protector, error) {
			return toyMix{m: float32(p.Get("toy_plan_mix"))}, nil
		}})
}

// toy_fail's runs fail: its protector returns an error.
func init() {
	protect.Register(protect.Spec{Name: "toy_fail", Help: "fails (a test plug-in)", Color: 0xb15928,
		New: func(protect.Params) (protect.Protector, error) { return toyFail{}, nil }})
}

type toyFail struct{}

func (toyFail) Name() string { return "toy_fail" }

func (toyFail) Protect(*protect.Batch, *tensor.Matrix, *rand.Rand) (protect.Stats, error) {
	return nil, errors.New("toy_fail fails")
}

type toyMix struct{ m float32 }

func (toyMix) Name() string { return "toy_plan" }

func (t toyMix) Protect(b *protect.Batch, out *tensor.Matrix, rng *rand.Rand) (protect.Stats, error) {
	out.Resize(b.Grad.Rows, b.Grad.Cols)
	for i, v := range b.Grad.Data {
		out.Data[i] = (1-t.m)*v + t.m*float32(rng.NormFloat64())*1e-3
	}
	return nil, nil
}

// writeTable writes a small CSV table whose label follows a logistic
// model of its columns; rows whose 0-based number is in flip get the
// other label.
func writeTable(t *testing.T, path string, n int, flip map[uint64]bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(42, 1))
	var sb strings.Builder
	sb.WriteString("age,score,region,label\n")
	regions := []string{"north", "south", "east", "west"}
	for i := range n {
		age := 18 + rng.Float64()*60
		score := rng.NormFloat64()
		r := rng.IntN(len(regions))
		z := -1 + 0.04*(age-48) + 1.2*score + []float64{0.8, -0.4, 0, 0.3}[r]
		y := rng.Float64() < 1/(1+math.Exp(-z))
		if flip[uint64(i)] {
			y = !y
		}
		l := "no"
		if y {
			l = "yes"
		}
		fmt.Fprintf(&sb, "%.1f,%.4f,%s,%s\n", age, score, regions[r], l)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testOptions is a plan of a 600-row table over toy_plan at three
// strengths, 30 steps per setting.
func testOptions(t *testing.T, table, out string) Options {
	cfg := config.Default()
	cfg.Data, cfg.Format, cfg.Label, cfg.Positive = table, "csv", "label", config.Values{"yes"}
	cfg.Layers, cfg.Batch, cfg.EvalEvery = []int{16, 16, 16}, 64, 10
	return Options{Base: cfg, Threat: Threat{Attacks: []string{"norm", "spectral"}, MaxLeak: 0.5},
		Out: out, Budget: time.Hour, MaxSteps: 64, Grid: 3, Defences: []string{"toy_plan"}}
}

func newTable(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "table.csv")
	writeTable(t, path, 600, nil)
	return path
}

// stableCSV returns plan.csv without its timing columns (step_ms,
// seconds), which differ between runs of the same settings.
func stableCSV(t *testing.T, dir string) [][]string {
	t.Helper()
	return stableFile(t, filepath.Join(dir, CSVFile), nil)
}

// searchCSV returns stableCSV without the confirmation's columns, which
// each invocation's confirmation rewrites.
func searchCSV(t *testing.T, dir string) [][]string {
	t.Helper()
	return stableFile(t, filepath.Join(dir, CSVFile), seedColumns)
}

// stableFile returns the CSV file at path without its timing columns
// and the columns named in drop.
func stableFile(t *testing.T, path string, dropCols []string) [][]string {
	t.Helper()
	f, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(f)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	drop := map[int]bool{}
	for i, h := range recs[0] {
		if h == "step_ms" || h == "seconds" || slices.Contains(dropCols, h) {
			drop[i] = true
		}
	}
	for i, r := range recs {
		var k []string
		for j, v := range r {
			if !drop[j] {
				k = append(k, v)
			}
		}
		recs[i] = k
	}
	return recs
}

func TestPlanSettingsFromRegistry(t *testing.T) {
	s, err := Settings(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s[0].Key() != "none" {
		t.Errorf("first setting %q, want the reference none", s[0].Key())
	}
	// toy_plan_mix in (0, 1], no representative setting: b = 1, the grid
	// is 4 log-spaced values over [0.01, 1], coarse to fine.
	want := []string{"toy_plan toy_plan_mix=0.0464", "toy_plan toy_plan_mix=0.01", "toy_plan toy_plan_mix=1", "toy_plan toy_plan_mix=0.215"}
	var got []string
	for _, x := range s {
		if x.Protect == "toy_plan" {
			got = append(got, x.Key())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("toy_plan settings %q, want %q", got, want)
	}
	// Every registered defence joins, and every setting passes protect.Check.
	seen := map[string]bool{}
	for _, x := range s {
		if err := protect.Check(x.Protect, x.Params); err != nil {
			t.Errorf("%s: %v", x.Key(), err)
		}
		seen[x.Legend().Method] = true
	}
	for _, sp := range protect.Specs() {
		if !seen[sp.Name] {
			t.Errorf("defence %s is not searched", sp.Name)
		}
	}
	if _, err := Settings(4, []string{"nope"}); err == nil || !strings.Contains(err.Error(), `unknown defence "nope"`) {
		t.Errorf("unknown defence: err %v", err)
	}
}

func TestPlanStrengths(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name  string
		p     protect.Param
		bench protect.Params
		n     int
		want  []float64
	}{
		{"open half-line, bench 1", protect.Param{Key: "a", Min: 0, MinOpen: true, Max: inf}, protect.Params{"a": 1}, 4, []float64{0.01, 0.1, 1, 10}},
		{"bench 0.001", protect.Param{Key: "a", Min: 0, MinOpen: true, Max: inf}, protect.Params{"a": 1e-3}, 3, []float64{1e-5, 1e-4 * math.Sqrt(10), 1e-2}},
		{"integer from 2", protect.Param{Key: "a", Int: true, Min: 2, Max: 1 << 20}, protect.Params{"a": 3}, 3, []float64{2, 8, 30}},
		{"integer without bench", protect.Param{Key: "a", Int: true, Min: 1, Max: inf}, nil, 3, []float64{1, 3, 10}},
		{"open top end", protect.Param{Key: "a", Min: 0, Max: 1, MaxOpen: true}, protect.Params{"a": 0.5}, 2, []float64{0.005, 0.99}},
		{"one strength", protect.Param{Key: "a", Min: 0, MinOpen: true, Max: inf}, protect.Params{"a": 4}, 1, []float64{math.Sqrt(0.04 * 40)}},
	} {
		got := strengths(c.p, c.bench, c.n)
		ok := len(got) == len(c.want)
		for i := range got {
			ok = ok && math.Abs(got[i]-c.want[i]) <= 0.005*c.want[i]
		}
		if !ok {
			t.Errorf("%s: strengths %v, want %v", c.name, got, c.want)
		}
	}
	if got := coarseToFine([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8}); !slices.Equal(got, []float64{4, 0, 8, 2, 6, 1, 3, 5, 7}) {
		t.Errorf("coarseToFine: %v", got)
	}
}

// TestPlanNeverReadsTest plans on a table, then on the same table with
// every test row's label flipped: plan.csv (but its timings), the choice
// and recommended.yaml must be the same.
func TestPlanNeverReadsTest(t *testing.T) {
	table := newTable(t)
	o := testOptions(t, table, filepath.Join(t.TempDir(), "a"))
	split, err := o.Base.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	flip := map[uint64]bool{}
	for _, id := range split.Test.IDs {
		flip[id] = true
	}
	if len(flip) == 0 {
		t.Fatal("no test rows")
	}
	a, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	writeTable(t, table, 600, flip)
	o.Out = filepath.Join(filepath.Dir(o.Out), "b")
	b, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if ca, cb := stableCSV(t, filepath.Join(filepath.Dir(o.Out), "a")), stableCSV(t, o.Out); !slices.EqualFunc(ca, cb, slices.Equal) {
		t.Errorf("plan.csv differs with the test labels flipped:\n%v\n%v", ca, cb)
	}
	// The confirmation (seeds 2 and 3, on the plan's test split) too.
	da := filepath.Join(filepath.Dir(o.Out), "a")
	fa, fb := stableFile(t, filepath.Join(da, ConfirmFile), nil), stableFile(t, filepath.Join(o.Out, ConfirmFile), nil)
	if !slices.EqualFunc(fa, fb, slices.Equal) || len(fa) < 5 {
		t.Errorf("confirm.csv differs with the test labels flipped, or holds fewer than 4 runs:\n%v\n%v", fa, fb)
	}
	if a.Recommended != b.Recommended || len(a.Rows) != 4 || a.Rows[a.Recommended].Seeds.Verdict != Confirmed {
		t.Errorf("recommended %d then %d (of %d rows)", a.Recommended, b.Recommended, len(a.Rows))
	}
	// The cost interval comes from the saved models' validation scores
	// (which must give the runs' recorded AUCs, else it is NaN), and the
	// test labels do not move it.
	if fa, fb := a.Rows[a.Recommended].Seeds, b.Rows[b.Recommended].Seeds; !(fa.CostPILo <= fa.Cost && fa.Cost <= fa.CostPIHi) || !(fa.CostSE >= 0) || fa.CostPILo != fb.CostPILo || fa.CostPIHi != fb.CostPIHi {
		t.Errorf("cost interval [%g, %g] (SE %g) around the mean cost %g, with the test labels flipped [%g, %g]", fa.CostPILo, fa.CostPIHi, fa.CostSE, fa.Cost, fb.CostPILo, fb.CostPIHi)
	} else {
		t.Logf("%s: cost interval [%g, %g], SE %g, mean cost %g", a.Rows[a.Recommended].Legend, fa.CostPILo, fa.CostPIHi, fa.CostSE, fa.Cost)
	}
	// The poison reached the runs: their test AUCs (which the plan ignores) differ.
	testAUC := func(run string) float64 {
		raw, err := os.ReadFile(filepath.Join(run, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			TestAUC float64 `json:"test_auc_selected"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		return s.TestAUC
	}
	for _, run := range []func(string) string{
		func(dir string) string { return runDir(dir, Reference) },
		func(dir string) string { return confirmDir(dir, Reference, 2) },
	} {
		if ta, tb := testAUC(run(da)), testAUC(run(o.Out)); ta == tb {
			t.Errorf("%s: test AUC %v with and without the flipped test labels: the poison did not reach the test split", run(da), ta)
		}
	}
	ya, _ := os.ReadFile(filepath.Join(filepath.Dir(o.Out), "a", RecommendedFile))
	yb, _ := os.ReadFile(filepath.Join(o.Out, RecommendedFile))
	ya, yb = bytes.ReplaceAll(ya, []byte("/a"), nil), bytes.ReplaceAll(yb, []byte("/b"), nil)
	if !bytes.Equal(ya, yb) || len(ya) == 0 {
		t.Errorf("recommended.yaml differs:\n%s\n%s", ya, yb)
	}
}

// TestPlanBudgetAndResume runs a plan with a budget spent at once (the
// reference alone runs), stops a second invocation during a setting
// (SIGINT's cancellation), and finishes in a third: no setting is trained
// twice and the rows of the earlier invocations are kept as they were.
func TestPlanBudgetAndResume(t *testing.T) {
	o := testOptions(t, newTable(t), t.TempDir())
	o.Budget = time.Nanosecond
	var log strings.Builder
	o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Key() != "none" || !res.BudgetSpent || res.Total != 4 {
		t.Fatalf("tiny budget: %d rows (%v), budget spent %v, total %d; want the reference alone", len(res.Rows), res.Rows, res.BudgetSpent, res.Total)
	}
	first := searchCSV(t, o.Out)

	// Second invocation: cancelled during its second setting.
	o.Budget = time.Hour
	ctx, cancel := context.WithCancelCause(context.Background())
	settingsSeen := map[string]bool{}
	o.Progress = func(p Progress) {
		settingsSeen[p.Setting] = true
		if len(settingsSeen) == 2 && p.Step >= 5 {
			cancel(errors.New("test: stop"))
		}
	}
	log.Reset()
	if _, err := Run(ctx, o); err == nil || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("cancelled plan: err %v", err)
	}
	if strings.Contains(log.String(), "setting 1/") {
		t.Errorf("the reference was trained again:\n%s", log.String())
	}
	second := searchCSV(t, o.Out)
	if len(second) != 3 || !slices.Equal(second[1], first[1]) {
		t.Errorf("after the stop plan.csv holds %d lines, want header, reference and one setting:\n%v", len(second), second)
	}

	// Third: finishes the other two settings only.
	o.Progress = nil
	log.Reset()
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), `msg="setting `); n != 2 || res.Resumed != 2 || len(res.Rows) != 4 || res.BudgetSpent {
		t.Errorf("third invocation trained %d settings (want 2), resumed %d, %d rows, budget spent %v:\n%s", n, res.Resumed, len(res.Rows), res.BudgetSpent, log.String())
	}
	third := searchCSV(t, o.Out)
	if !slices.Equal(third[1], first[1]) || !slices.Equal(third[2], second[2]) {
		t.Errorf("earlier rows changed:\n%v\n%v", second, third)
	}
}

// TestPlanRecommends checks the choice against the runs' own
// summary.json files, by the tie rule worked here: a setting meets the
// limit when every attack's 95% upper bound (q95_abs_upper, at least 59
// batches) is within it; costs within the reference's Hanley–McNeil
// standard error (from its val_auc_selected, val_rows, val_positives) of
// the cheapest are ties, and among them the smallest bound goes first;
// the first in that order not rejected on further seeds is recommended.
// With a limit nothing meets: no recommended.yaml and the three settings
// nearest it.
func TestPlanRecommends(t *testing.T) {
	table := newTable(t)
	for _, limit := range []float64{0.5, 1e-6} {
		o := testOptions(t, table, t.TempDir())
		o.Threat.MaxLeak = limit
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := readCSV(filepath.Join(o.Out, CSVFile))
		if err != nil {
			t.Fatal(err)
		}
		type leak struct {
			Q95Abs float64  `json:"q95_abs"`
			Upper  *float64 `json:"q95_abs_upper"`
			N      int      `json:"batches"`
			Chance float64  `json:"chance_q95_abs"`
		}
		type summary struct {
			Val  float64         `json:"val_auc_selected"`
			Rows int             `json:"val_rows"`
			Pos  int             `json:"val_positives"`
			Leak map[string]leak `json:"leak"`
		}
		sums := make([]summary, len(rows))
		for i, r := range rows {
			b, err := os.ReadFile(filepath.Join(runDir(o.Out, r.Setting), "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &sums[i]); err != nil {
				t.Fatal(err)
			}
		}
		// The embedding attacks are judged net of the feature prior: the
		// same attack on the bottom as initialised (prior.go).
		var prior summary
		b, err := os.ReadFile(filepath.Join(priorDir(o.Out, o.Base.Seed), "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &prior); err != nil {
			t.Fatal(err)
		}
		if len(prior.Leak) == 0 {
			t.Fatal("the feature prior has no leak series")
		}
		for k := range prior.Leak {
			if !strings.HasPrefix(k, "spectral/") {
				t.Errorf("the feature prior scored %s, want the embedding attack spectral only", k)
			}
		}
		for i := range sums {
			for k, l := range sums[i].Leak {
				if p, ok := prior.Leak[k]; ok {
					pq := math.Max(p.Q95Abs, p.Chance)
					l.Q95Abs = math.Max(0, l.Chance+l.Q95Abs-pq)
					if l.Upper != nil {
						u := math.Max(0, l.Chance+*l.Upper-pq)
						l.Upper = &u
					}
					sums[i].Leak[k] = l
				}
			}
		}
		ref := sums[0]
		a, np, nn := ref.Val, float64(ref.Pos), float64(ref.Rows-ref.Pos)
		q1, q2 := a/(2-a), 2*a*a/(1+a)
		se := math.Sqrt((a*(1-a) + (np-1)*(q1-a*a) + (nn-1)*(q2-a*a)) / (np * nn))
		if math.IsNaN(se) || se <= 0 || math.Abs(res.TieSE-se) > 1e-12 {
			t.Errorf("tie threshold %v, want the reference's standard error %v", res.TieSE, se)
		}
		bound := make([]float64, len(rows))
		var met []int
		for i, r := range rows {
			if r.Cost != rows[0].ValAUC-r.ValAUC || r.ValAUC != sums[i].Val {
				t.Errorf("row %d: validation AUC %v cost %v, want %v and %v", i, r.ValAUC, r.Cost, sums[i].Val, sums[0].Val-sums[i].Val)
			}
			lk, enough := math.Inf(-1), true
			bound[i] = math.Inf(-1)
			for _, l := range sums[i].Leak {
				lk = math.Max(lk, l.Q95Abs)
				if l.Upper == nil {
					enough = false
					continue
				}
				bound[i] = math.Max(bound[i], *l.Upper)
				enough = enough && l.N >= 59
			}
			ok := enough && bound[i] <= limit
			if r.StrongestLeak != lk || r.Bound != bound[i] || r.Met != ok {
				t.Errorf("row %d: strongest %v bound %v met %v, want %v, %v and %v", i, r.StrongestLeak, r.Bound, r.Met, lk, bound[i], ok)
			}
			if ok {
				met = append(met, i)
			}
		}
		// The tie rule's order, then the first not rejected on further seeds.
		want := -1
		for len(met) > 0 {
			cheapest := math.Inf(1)
			for _, i := range met {
				cheapest = math.Min(cheapest, rows[i].Cost)
			}
			pick := -1
			for k, i := range met {
				if rows[i].Cost <= cheapest+se && (pick < 0 || bound[i] < bound[met[pick]] ||
					bound[i] == bound[met[pick]] && rows[i].Cost < rows[met[pick]].Cost) {
					pick = k
				}
			}
			if i := met[pick]; res.Rows[i].Seeds.Verdict != Rejected {
				want = i
				break
			}
			met = slices.Delete(met, pick, pick+1)
		}
		if res.Recommended != want {
			t.Errorf("limit %g: recommended %d, want %d", limit, res.Recommended, want)
		}
		yaml := filepath.Join(o.Out, RecommendedFile)
		if want < 0 {
			if _, err := os.Stat(yaml); !os.IsNotExist(err) || len(res.Closest) != 3 {
				t.Errorf("nothing meets %g: recommended.yaml stat %v, %d closest", limit, err, len(res.Closest))
			}
			for i := 1; i < len(res.Closest); i++ {
				if res.Closest[i].StrongestLeak < res.Closest[i-1].StrongestLeak {
					t.Errorf("closest not by leak: %v", res.Closest)
				}
			}
			continue
		}
		c, err := config.LoadFile(yaml, config.Default())
		if err != nil {
			t.Fatal(err)
		}
		r := rows[want]
		if c.Protect != r.Protect || !maps.Equal(c.Params, r.Params) || c.Data != table || c.MaxSteps != o.MaxSteps || !slices.Equal(c.Attacks, []string{"norm", "spectral"}) {
			t.Errorf("recommended.yaml: protect %s %v data %s max_steps %d attacks %v; want %s", c.Protect, c.Params, c.Data, c.MaxSteps, c.Attacks, r.Key())
		}
		sw, err := sweep.LoadSpec(filepath.Join(o.Out, RecheckFile))
		if err != nil {
			t.Fatal(err)
		}
		// The seeds after the two confirmation seeds, each within the limit.
		if runs, err := sw.Expand(); err != nil || len(runs) != 3 || !slices.Equal(sw.Seeds, []uint64{4, 5, 6}) {
			t.Errorf("recheck sweep: %v, %d runs, seeds %v", err, len(runs), sw.Seeds)
		}
		conf, err := readCSV(filepath.Join(o.Out, ConfirmFile))
		if err != nil {
			t.Fatal(err)
		}
		var seeds []uint64
		for _, cr := range conf {
			if cr.Key() == r.Key() && cr.StrongestLeak <= limit {
				seeds = append(seeds, cr.Seed)
			}
		}
		if slices.Sort(seeds); !slices.Equal(seeds, []uint64{2, 3}) {
			t.Errorf("confirm.csv holds the recommendation within the limit at seeds %v, want 2 and 3", seeds)
		}
		c.Out = t.TempDir() // the user's --out
		if err := c.Validate(); err != nil {
			t.Errorf("recommended.yaml does not validate: %v", err)
		}
	}
}

// TestPlanRefusesOtherThreat reruns a plan's directory with another
// limit, attacks or table.
func TestPlanRefusesOtherThreat(t *testing.T) {
	o := testOptions(t, newTable(t), t.TempDir())
	o.Budget = time.Nanosecond
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Options)
		key  string
	}{
		{"limit", func(o *Options) { o.Threat.MaxLeak = 0.2 }, "max_leak"},
		{"attacks", func(o *Options) { o.Threat.Attacks = []string{"norm"} }, "attacks"},
		{"known labels", func(o *Options) { o.Threat.Known = 8 }, "tuned_known"},
		{"table", func(o *Options) { o.Base.Data = filepath.Join(t.TempDir(), "other.csv") }, "data"},
	} {
		p := o
		c.edit(&p)
		_, err := Run(context.Background(), p)
		if !errors.Is(err, ErrOtherPlan) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%s: err %v, want ErrOtherPlan naming %s", c.name, err, c.key)
		}
	}
}

func TestPlanBadOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no out", func(o *Options) { o.Out = "" }, "key out"},
		{"limit 0", func(o *Options) { o.Threat.MaxLeak = 0 }, "key max_leak"},
		{"limit 0.6", func(o *Options) { o.Threat.MaxLeak = 0.6 }, "key max_leak"},
		{"no budget", func(o *Options) { o.Budget = 0 }, "key budget"},
		{"negative steps", func(o *Options) { o.MaxSteps = -1 }, "key steps"},
		{"no validation", func(o *Options) { o.Base.ValFrac = 0 }, "key val_frac"},
		{"unknown defence", func(o *Options) { o.Defences = []string{"nope"} }, `unknown defence "nope"`},
		{"unknown attack", func(o *Options) { o.Threat.Attacks = []string{"nope"} }, "nope"},
		{"model attack", func(o *Options) { o.Threat.Attacks = []string{"completion"} }, "test split"},
		{"tuned_known 1", func(o *Options) { o.Threat.Known = 1 }, "tuned_known"},
	} {
		o := testOptions(t, newTable(t), t.TempDir())
		c.edit(&o)
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// TestPlanReindex: rows read back take their places in the current
// search order; a setting no longer searched goes last.
func TestPlanReindex(t *testing.T) {
	a := Setting{Protect: "marvell", Params: protect.Params{"marvell_s": 1}}
	b := Setting{Protect: "none", Params: protect.Params{"dcor_alpha": 1}}
	gone := Setting{Protect: "gone", Params: protect.Params{}}
	rows := []Row{{Index: 0, Setting: Reference}, {Index: 1, Setting: gone}, {Index: 2, Setting: a}, {Index: 3, Setting: b}}
	reindex(rows, []Setting{Reference, b, a})
	var got []string
	var idx []int
	for _, r := range rows {
		got, idx = append(got, r.Key()), append(idx, r.Index)
	}
	if want := []string{"none", "none dcor_alpha=1", "marvell marvell_s=1", "gone"}; !slices.Equal(got, want) || !slices.Equal(idx, []int{0, 1, 2, 4}) {
		t.Errorf("reindexed %v %v, want %v [0 1 2 4]", got, idx, want)
	}
	if d := runDir("/p", Setting{Protect: "grad_dp", Params: protect.Params{"grad_dp_sigma": 0.1, "grad_dp_clip": 0.001}}); d != "/p/runs/grad_dp_grad_dp_clip=0.001_grad_dp_sigma=0.1" {
		t.Errorf("runDir %s", d)
	}
}

// TestPlanFailedSetting: a setting whose run fails is a row with its
// error that does not meet the limit, and the plan goes on.
func TestPlanFailedSetting(t *testing.T) {
	o := testOptions(t, newTable(t), t.TempDir())
	o.Defences = []string{"toy_fail", "toy_plan"}
	o.Grid = 1
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range res.Rows {
		keys = append(keys, r.Key())
		if (r.Protect == "toy_fail") != (r.Err != "") || (r.Err != "" && r.Met) {
			t.Errorf("%s: error %q, met %v", r.Key(), r.Err, r.Met)
		}
	}
	if want := []string{"none", "toy_fail", "toy_plan toy_plan_mix=0.1"}; !slices.Equal(keys, want) || res.Recommended < 0 || res.Rows[res.Recommended].Protect == "toy_fail" {
		t.Errorf("rows %q (want %q), recommended %d", keys, want, res.Recommended)
	}
}
