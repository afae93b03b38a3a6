package plan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/sweep"
)

// seedFigure is a fake run's validation AUC and strongest leak.
type seedFigure struct{ val, leak float64 }

// fakeFigures are hand-set figures per setting and seed (seed 1 the
// plan's): toy_plan m=0.01 is the cheapest within 0.3 on seed 1 (0.28) and
// leaks 0.33 on seed 2; m=0.1 stays within it on every seed (0.25, 0.26,
// 0.27: mean 0.26, s = 0.01, a 95% prediction bound 0.26 + 2.920·0.01·√(4/3)
// = 0.2937, within 0.3 too); m=1 is far within it on seeds 1 and 2 and
// above it on seed 3.
var fakeFigures = map[string]map[uint64]seedFigure{
	"none":                       {1: {0.90, 0.40}, 2: {0.91, 0.40}, 3: {0.89, 0.40}},
	"toy_plan toy_plan_mix=0.01": {1: {0.89, 0.28}, 2: {0.89, 0.33}, 3: {0.89, 0.20}},
	"toy_plan toy_plan_mix=0.1":  {1: {0.87, 0.25}, 2: {0.89, 0.26}, 3: {0.85, 0.27}},
	"toy_plan toy_plan_mix=1":    {1: {0.70, 0.10}, 2: {0.70, 0.10}, 3: {0.70, 0.35}},
}

// fakeTrainer trains nothing: it returns fakeFigures' summary of the
// run's setting and seed, records each call ("KEY@SEED") and advances
// its clock by ten seconds a run; cancel, when set, is called on the run
// it names (which then fails as a cancelled run does).
type fakeTrainer struct {
	t      *testing.T
	calls  []string
	priors []string // the feature-prior runs, "KEY@SEED"
	clock  time.Time
	cancel func(call string) bool
}

func (f *fakeTrainer) now() time.Time { return f.clock }

func (f *fakeTrainer) train(ctx context.Context, cfg config.Config, _ run.Options) (*rundir.Summary, error) {
	s := Setting{Protect: cfg.Protect, Params: cfg.Params}
	call := fmt.Sprintf("%s@%d", s.Key(), cfg.Seed)
	if cfg.LR == PriorLR {
		// The feature prior: none here (its netting is tested by
		// TestNetOfPriorByHand and TestFeaturePriorRuns).
		f.priors = append(f.priors, call)
		if s.Key() != Reference.Key() || !slices.Equal(cfg.Attacks, []string{"spectral"}) || cfg.EarlyStop != 0 {
			f.t.Errorf("feature prior %s: attacks %v, early stop %d; want no defence, [spectral] (the threat's embedding attack), 0",
				call, cfg.Attacks, cfg.EarlyStop)
		}
		if cfg.DataSeed() != 1 {
			f.t.Errorf("feature prior %s: data seed %d, want the plan's 1", call, cfg.DataSeed())
		}
		return &rundir.Summary{Leak: map[string]metrics.LeakSummary{}}, nil
	}
	f.clock = f.clock.Add(10 * time.Second)
	if f.cancel != nil && f.cancel(call) {
		return nil, ctx.Err()
	}
	f.calls = append(f.calls, call)
	// Every run, confirmation or not, has the plan's data and test split.
	if cfg.DataSeed() != 1 {
		f.t.Errorf("%s: data seed %d, want the plan's 1", call, cfg.DataSeed())
	}
	fig, ok := fakeFigures[s.Key()][cfg.Seed]
	if !ok {
		return nil, fmt.Errorf("no figure for %s", call)
	}
	return &rundir.Summary{ValAUCSelected: &fig.val, StepMSMean: 1, Seconds: 10,
		Leak: map[string]metrics.LeakSummary{"norm/cut": {Q95Abs: fig.leak, ChanceQ95Abs: 0.1, Q95AbsUpper: fig.leak, Batches: 200},
			"spectral/1": {Q95Abs: fig.leak / 2, Q95AbsUpper: fig.leak / 2, Batches: 200}}}, nil
}

// fakeOptions is testOptions with the fake trainer and its clock.
func fakeOptions(t *testing.T, limit float64) (Options, *fakeTrainer) {
	f := &fakeTrainer{t: t, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o := testOptions(t, newTable(t), t.TempDir())
	o.Threat.MaxLeak = limit
	o.train, o.Now = f.train, f.now
	return o, f
}

// planColumn returns plan.csv's column name for the row of setting key.
func planColumn(t *testing.T, dir, key, name string) string {
	t.Helper()
	recs := stableCSV(t, dir)
	col := slices.Index(recs[0], name)
	for _, r := range recs[1:] {
		if strings.TrimSpace(r[1]+" "+r[2]) == key {
			return r[col]
		}
	}
	t.Fatalf("plan.csv has no row %s", key)
	return ""
}

// TestConfirmRejectsTheOneSeedWinner: by hand, the cheapest setting
// within the limit on seed 1 is m=0.01 (cost 0.01), which leaks 0.33 > 0.3
// on seed 2: it is rejected there (its seed 3 never trained), and m=0.1
// (cost 0.03), within the limit on seeds 1, 2 and 3, is recommended; its
// costs against the reference of the same seed are 0.03, 0.02 and 0.04.
func TestConfirmRejectsTheOneSeedWinner(t *testing.T) {
	o, f := fakeOptions(t, 0.3)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []string{"none@1", "toy_plan toy_plan_mix=0.1@1", "toy_plan toy_plan_mix=0.01@1", "toy_plan toy_plan_mix=1@1",
		"none@2", "toy_plan toy_plan_mix=0.01@2", "toy_plan toy_plan_mix=0.1@2", "none@3", "toy_plan toy_plan_mix=0.1@3"}
	if !slices.Equal(f.calls, wantCalls) {
		t.Errorf("runs\n%q\nwant\n%q", f.calls, wantCalls)
	}
	if res.Recommended < 0 || res.Rows[res.Recommended].Key() != "toy_plan toy_plan_mix=0.1" {
		t.Fatalf("recommended %d, want m=0.1 (rows %v)", res.Recommended, res.Rows)
	}
	if len(res.Rejected) != 1 || res.Rejected[0].Key() != "toy_plan toy_plan_mix=0.01" || res.Rejected[0].Seeds.N != 2 || res.Rejected[0].Seeds.Leak != 0.33 || res.Rejected[0].Seeds.ByPrediction {
		t.Errorf("rejected %+v, want m=0.01 over 2 seeds at 0.33, at a seed", res.Rejected)
	}
	got := res.Rows[res.Recommended].Seeds
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if got.N != 3 || got.Leak != 0.27 || math.Abs(got.LeakPred-0.2937) > 1e-4 || got.LeakLo != 0.25 || !near(got.Cost, 0.03) || !near(got.CostLo, 0.02) || !near(got.CostHi, 0.04) || got.Verdict != Confirmed {
		t.Errorf("confirmed figures %+v, want 3 seeds, leak 0.25 to 0.27 (prediction bound 0.2937), cost 0.03 (0.02 to 0.04)", got)
	}
	for key, want := range map[string][]string{
		"toy_plan toy_plan_mix=0.1":  {"3", "0.27", Confirmed},
		"toy_plan toy_plan_mix=0.01": {"2", "0.33", Rejected},
		"toy_plan toy_plan_mix=1":    {"", "", ""},
		"none":                       {"3", "0.4", ""},
	} {
		for i, name := range []string{"confirm_seeds", "confirm_leak_max", "confirmation"} {
			if v := planColumn(t, o.Out, key, name); v != want[i] {
				t.Errorf("plan.csv %s %s = %q, want %q", key, name, v, want[i])
			}
		}
	}
	if v, _ := strconv.ParseFloat(planColumn(t, o.Out, "toy_plan toy_plan_mix=0.1", "confirm_cost_mean"), 64); !near(v, 0.03) {
		t.Errorf("plan.csv confirm_cost_mean %v, want 0.03", v)
	}
	conf, err := readCSV(filepath.Join(o.Out, ConfirmFile))
	if err != nil || len(conf) != 5 {
		t.Fatalf("confirm.csv: %v, %d rows, want 5", err, len(conf))
	}
	c, err := config.LoadFile(filepath.Join(o.Out, RecommendedFile), config.Default())
	if err != nil || c.Params["toy_plan_mix"] != 0.1 {
		t.Fatalf("recommended.yaml: %v, params %v", err, c.Params)
	}
	sw, err := sweep.LoadSpec(filepath.Join(o.Out, RecheckFile))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := sw.Expand()
	if err != nil || len(runs) != 3 || !slices.Equal(sw.Seeds, []uint64{4, 5, 6}) || runs[0].Config["split_seed"] != 1 {
		t.Errorf("recheck sweep: %v, seeds %v (want 4 5 6, after the confirmation's), split_seed %v (want 1)", err, sw.Seeds, runs[0].Config["split_seed"])
	}
}

// TestConfirmOffTakesTheOneSeedWinner: without a confirmation the plan
// recommends m=0.01, the one-seed choice, and trains nothing more.
func TestConfirmOffTakesTheOneSeedWinner(t *testing.T) {
	o, f := fakeOptions(t, 0.3)
	o.ConfirmSeeds = NoConfirm
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 4 || res.Recommended < 0 || res.Rows[res.Recommended].Key() != "toy_plan toy_plan_mix=0.01" {
		t.Errorf("%d runs, recommended %d; want 4 and m=0.01", len(f.calls), res.Recommended)
	}
}

// TestConfirmNothingHolds: at a limit of 0.26, m=0.1 (0.27 on seed 3) and
// m=1 (0.35 on seed 3) are rejected and nothing is recommended; the
// closest settings are ranked by their largest leak over the seeds:
// m=0.1 (0.27), m=0.01 (one seed, 0.28), m=1 (0.35).
func TestConfirmNothingHolds(t *testing.T) {
	o, _ := fakeOptions(t, 0.26)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var closest, rejected []string
	for _, r := range res.Closest {
		closest = append(closest, r.Key())
	}
	for _, r := range res.Rejected {
		rejected = append(rejected, r.Key())
	}
	if res.Recommended >= 0 || !slices.Equal(rejected, []string{"toy_plan toy_plan_mix=0.1", "toy_plan toy_plan_mix=1"}) ||
		!slices.Equal(closest, []string{"toy_plan toy_plan_mix=0.1", "toy_plan toy_plan_mix=0.01", "toy_plan toy_plan_mix=1"}) {
		t.Errorf("recommended %d, rejected %q, closest %q", res.Recommended, rejected, closest)
	}
	if _, err := config.LoadFile(filepath.Join(o.Out, RecommendedFile), config.Default()); err == nil {
		t.Error("recommended.yaml written with nothing confirmed")
	}
}

// TestConfirmBudgetAndResume: the search done without a confirmation, a
// 25-second budget (runs of ten) confirms as far as it goes and
// recommends nothing; a stop during the next invocation's confirmation
// drops that run only; the last invocation trains only what is missing.
func TestConfirmBudgetAndResume(t *testing.T) {
	o, f := fakeOptions(t, 0.3)
	o.ConfirmSeeds = NoConfirm
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	o.ConfirmSeeds, o.Budget, f.calls = 0, 25*time.Second, nil
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"none@2", "toy_plan toy_plan_mix=0.01@2"}; !slices.Equal(f.calls, want) || res.Recommended >= 0 || res.Pending < 0 ||
		res.Rows[res.Pending].Key() != "toy_plan toy_plan_mix=0.1" || !res.BudgetSpent {
		t.Fatalf("budget of 25 s: runs %q (want %q), recommended %d, pending %d, budget spent %v", f.calls, want, res.Recommended, res.Pending, res.BudgetSpent)
	}
	if v := planColumn(t, o.Out, "toy_plan toy_plan_mix=0.1", "confirmation"); v != Pending {
		t.Errorf("plan.csv confirmation %q, want %s", v, Pending)
	}
	o.Budget, f.calls = time.Hour, nil
	ctx, cancel := context.WithCancelCause(context.Background())
	f.cancel = func(call string) bool {
		if call == "none@3" {
			cancel(errors.New("test: stop"))
			return true
		}
		return false
	}
	if _, err := Run(ctx, o); err == nil || !strings.Contains(err.Error(), "confirmation") || !strings.Contains(err.Error(), "dropped") {
		t.Fatalf("stopped plan: err %v", err)
	}
	f.cancel, f.calls = nil, nil
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"none@3", "toy_plan toy_plan_mix=0.1@3"}; !slices.Equal(f.calls, want) || res.Recommended < 0 || res.Rows[res.Recommended].Key() != "toy_plan toy_plan_mix=0.1" {
		t.Errorf("last invocation: runs %q (want %q), recommended %d", f.calls, want, res.Recommended)
	}
}

// TestConfirmTDCSFloor: with a T-DCS floor of 0.765 alone, each seed's
// T-DCS (norm at the leak, spectral at half of it; the cost against the
// reference of the same seed) computed independently by hand (Python):
// m=0.01 0.7755 on seed 1 and 0.7461 on seed 2 (rejected); m=0.1 0.7937,
// 0.78766 and 0.78067 (confirmed; no leak limit, so no prediction bound
// is judged).
func TestConfirmTDCSFloor(t *testing.T) {
	o, _ := fakeOptions(t, 0)
	o.Threat.MinTDCS = 0.765
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recommended < 0 || res.Rows[res.Recommended].Key() != "toy_plan toy_plan_mix=0.1" || len(res.Rejected) != 1 || res.Rejected[0].Key() != "toy_plan toy_plan_mix=0.01" {
		t.Fatalf("recommended %d, rejected %v; want m=0.1 after m=0.01", res.Recommended, res.Rejected)
	}
	if got := res.Rows[res.Recommended].Seeds.TDCS; math.Abs(got-0.7806738531344787) > 1e-9 {
		t.Errorf("smallest T-DCS over the seeds %v, want 0.7806738531344787", got)
	}
	if got := res.Rejected[0].Seeds.TDCS; math.Abs(got-0.746114577372202) > 1e-9 {
		t.Errorf("rejected m=0.01's smallest T-DCS %v, want 0.746114577372202", got)
	}
}

// TestConfirmReservesTime: runs of ten seconds and two confirmation seeds
// keep 3·2·10 s for the confirmation, so with 85 s a setting starts only
// while 70 s are left: the reference (at 0 s) and m=0.1 (at 10 s) are
// searched, m=0.01 (at 20 s, 65 s left) is not, and m=0.1's confirmation
// (four runs) fits in what is left.
func TestConfirmReservesTime(t *testing.T) {
	o, f := fakeOptions(t, 0.3)
	o.Budget = 85 * time.Second
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"none@1", "toy_plan toy_plan_mix=0.1@1", "none@2", "toy_plan toy_plan_mix=0.1@2", "none@3", "toy_plan toy_plan_mix=0.1@3"}
	if !slices.Equal(f.calls, want) || !res.BudgetSpent || res.Recommended < 0 || res.Rows[res.Recommended].Key() != "toy_plan toy_plan_mix=0.1" {
		t.Errorf("runs %q (want %q), budget spent %v, recommended %d", f.calls, want, res.BudgetSpent, res.Recommended)
	}
}

// TestConfirmPredictionBoundRejects: at a limit of 0.29 the largest leak
// over the seeds would accept m=0.1 (0.25, 0.26, 0.27, all within it),
// but its 95% prediction bound for a further seed, by hand 0.26 +
// t(2, 0.95)·0.01·√(1 + ⅓) with t(2, 0.95) = 0.9/√(2·0.95·0.05) =
// 2.9200, is 0.2937 > 0.29: it is rejected after its three seeds, m=0.01
// (0.33 on seed 2) and m=1 (0.35 on seed 3) as before, and nothing is
// recommended. At 0.295 the same figures confirm it.
func TestConfirmPredictionBoundRejects(t *testing.T) {
	want := 0.26 + 0.9/math.Sqrt(2*0.95*0.05)*0.01*math.Sqrt(4.0/3)
	for _, c := range []struct {
		limit float64
		rec   string
	}{{0.29, ""}, {0.295, "toy_plan toy_plan_mix=0.1"}} {
		o, f := fakeOptions(t, c.limit)
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		rec := ""
		if res.Recommended >= 0 {
			rec = res.Rows[res.Recommended].Key()
		}
		if rec != c.rec {
			t.Errorf("limit %g: recommended %q, want %q", c.limit, rec, c.rec)
		}
		if !slices.Contains(f.calls, "toy_plan toy_plan_mix=0.1@3") {
			t.Errorf("limit %g: m=0.1 not trained with seed 3: %q", c.limit, f.calls)
		}
		i := slices.IndexFunc(res.Rows, func(r Row) bool { return r.Key() == "toy_plan toy_plan_mix=0.1" })
		got := res.Rows[i].Seeds
		if got.N != 3 || got.Leak != 0.27 || math.Abs(got.LeakPred-want) > 1e-9 {
			t.Errorf("limit %g: m=0.1's figures %+v, want 3 seeds, largest 0.27, prediction bound %.6f", c.limit, got, want)
		}
		wantVerdict := Rejected
		if c.rec != "" {
			wantVerdict = Confirmed
		}
		if got.Verdict != wantVerdict || got.ByPrediction != (c.rec == "") {
			t.Errorf("limit %g: m=0.1's verdict %q (by the prediction bound: %v), want %q", c.limit, got.Verdict, got.ByPrediction, wantVerdict)
		}
		if v := planColumn(t, o.Out, "toy_plan toy_plan_mix=0.1", "confirm_leak_pred95"); v == "" || math.Abs(must(strconv.ParseFloat(v, 64))-want) > 1e-4 {
			t.Errorf("limit %g: plan.csv confirm_leak_pred95 %q, want %.4f", c.limit, v, want)
		}
	}
}

// must returns v, or NaN on err (a test's one-line parse).
func must(v float64, err error) float64 {
	if err != nil {
		return math.NaN()
	}
	return v
}

// TestFeaturePriorRuns: a plan trains the feature prior once per seed it
// trains a setting with (the plan's seed 1 and the confirmation seeds 2
// and 3), each with no defence, the threat's embedding attack only and no
// early stopping (the fake trainer checks the configuration), and writes
// its configuration for a fresh seed's check.
func TestFeaturePriorRuns(t *testing.T) {
	o, f := fakeOptions(t, 0.3)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if want := []string{"none@1", "none@2", "none@3"}; !slices.Equal(f.priors, want) {
		t.Errorf("feature priors %v, want %v", f.priors, want)
	}
	c, err := config.LoadFile(filepath.Join(o.Out, PriorFile), config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c.LR != PriorLR || c.EarlyStop != 0 || !slices.Equal(c.Attacks, []string{"spectral"}) || c.Protect != Reference.Protect {
		t.Errorf("%s: lr %g, early stop %d, attacks %v, protect %s; want %g, 0, [spectral], none", PriorFile, c.LR, c.EarlyStop, c.Attacks, c.Protect, PriorLR)
	}
}
