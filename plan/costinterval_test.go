package plan

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/run"
)

// TestCostIntervalByHand checks the interval on hand-worked cases, with
// Student's quantiles in closed form: ν = 2, t(0.975) = 0.95·√(2/0.0975)
// = 4.3027; ν = 1, tan(0.475π) = 12.706.
//
//	costs 0.01, 0.02, 0.03, se 0.005: mean 0.02, s² = 1e-4,
//	  half = 4.3027·√(1e-4·4/3 + 2.5e-5) = 4.3027·0.0125831 = 0.054141
//	costs 0, 0.01, se 0: mean 0.005, s² = 5e-5, half = 12.706·√(7.5e-5) = 0.11004
func TestCostIntervalByHand(t *testing.T) {
	t2 := 0.95 * math.Sqrt(2/0.0975)
	t1 := math.Tan(0.475 * math.Pi)
	for _, c := range []struct {
		costs    []float64
		se       float64
		mean, hw float64
	}{
		{[]float64{0.01, 0.02, 0.03}, 0.005, 0.02, t2 * math.Sqrt(1e-4*4/3+0.005*0.005)},
		{[]float64{0, 0.01}, 0, 0.005, t1 * math.Sqrt(5e-5*1.5)},
		{[]float64{0.02, 0.02, 0.02}, 0.01, 0.02, t2 * 0.01}, // no spread: the split's noise alone
	} {
		lo, hi := costInterval(c.costs, c.se, 0.95)
		if math.Abs(lo-(c.mean-c.hw)) > 1e-6 || math.Abs(hi-(c.mean+c.hw)) > 1e-6 {
			t.Errorf("%v, se %g: [%.6f, %.6f], want [%.6f, %.6f]", c.costs, c.se, lo, hi, c.mean-c.hw, c.mean+c.hw)
		}
	}
	if got := 4.3027 * math.Sqrt(1e-4*4/3+2.5e-5); math.Abs(got-0.054141) > 1e-5 {
		t.Errorf("the worked half-width %.6f, want 0.054141", got)
	}
	for _, c := range []struct {
		costs []float64
		se    float64
	}{{[]float64{0.01}, 0}, {[]float64{0.01, 0.02}, math.NaN()}, {[]float64{0.01, math.NaN()}, 0}} {
		if lo, hi := costInterval(c.costs, c.se, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
			t.Errorf("%v, se %g: [%g, %g], want NaN", c.costs, c.se, lo, hi)
		}
	}
}

// TestCostIntervalCoversAFreshSeed simulates the model the interval
// assumes: three seeds' costs μ + e, e ~ N(0, σ²), and a further seed's
// test cost μ + e + ε, ε ~ N(0, se²) with se known. Without split noise
// (se = 0) the interval is the t prediction interval, exact at 95%; with
// it, the t factor on the known part makes it at least as wide as needed.
func TestCostIntervalCoversAFreshSeed(t *testing.T) {
	const trials = 20000
	rng := rand.New(rand.NewPCG(29, 29))
	for _, c := range []struct{ sigma, se, lo, hi float64 }{
		{0.01, 0, 0.94, 0.96},
		{0.01, 0.01, 0.95, 1},
		{0.002, 0.02, 0.95, 1},
	} {
		in := 0
		costs := make([]float64, 3)
		for range trials {
			for i := range costs {
				costs[i] = 0.01 + c.sigma*rng.NormFloat64()
			}
			fresh := 0.01 + c.sigma*rng.NormFloat64() + c.se*rng.NormFloat64()
			if lo, hi := costInterval(costs, c.se, 0.95); fresh >= lo && fresh <= hi {
				in++
			}
		}
		if r := float64(in) / trials; r < c.lo || r > c.hi {
			t.Errorf("σ %g, se %g: coverage %.4f, want [%g, %g]", c.sigma, c.se, r, c.lo, c.hi)
		}
	}
}

// fakeScores returns scores of 10 positives and 10 negatives whose AUC
// is auc (a multiple of 0.01): the negatives score 0 … 9, positive i
// scores k_i − ½ so that it outscores k_i of them, the k_i summing to
// 100·auc.
func fakeScores(auc float64, testRows int) *run.ValScores {
	c := int(math.Round(100 * auc))
	s := &run.ValScores{TestRows: testRows}
	for i := range 10 {
		k := c / 10
		if i < c%10 {
			k++
		}
		s.IDs = append(s.IDs, uint64(i))
		s.Labels = append(s.Labels, 1)
		s.Scores = append(s.Scores, float64(k)-0.5)
	}
	for j := range 10 {
		s.IDs = append(s.IDs, uint64(10+j))
		s.Labels = append(s.Labels, 0)
		s.Scores = append(s.Scores, float64(j))
	}
	return s
}

// fakeDirScores reads the setting and seed off a run directory's name
// and returns fakeScores of fakeFigures' validation AUC.
func fakeDirScores(testRows int, shift float64) func(string) (*run.ValScores, error) {
	return func(dir string) (*run.ValScores, error) {
		name := filepath.Base(dir)
		seed := uint64(1)
		if i := strings.LastIndex(name, "_seed="); i >= 0 {
			n, err := strconv.ParseUint(name[i+len("_seed="):], 10, 64)
			if err != nil {
				return nil, err
			}
			name, seed = name[:i], n
		}
		for key, figs := range fakeFigures {
			if runDir("", Setting{Protect: strings.Fields(key)[0], Params: mustParams(key)}) == filepath.Join("runs", name) {
				return fakeScores(figs[seed].val+shift, testRows), nil
			}
		}
		return nil, os.ErrNotExist
	}
}

// mustParams parses a fake setting key's parameters ("toy_plan
// toy_plan_mix=0.1").
func mustParams(key string) protect.Params {
	f := strings.Fields(key)
	if len(f) < 2 {
		return nil
	}
	p, err := parseParams(f[1])
	if err != nil {
		panic(err)
	}
	return p
}

// TestConfirmCostInterval: the recommendation of
// TestConfirmRejectsTheOneSeedWinner (m=0.1, costs 0.03, 0.02, 0.04
// against the reference of each seed) gets the interval from its and the
// reference's validation scores at seeds 1, 2, 3: DeLong's variance of
// each seed's paired difference, scaled from the 20 validation rows to
// the 40 test rows (halved) and averaged; plan.csv, plan.json and
// recommended.yaml carry it. Scores whose AUC is not the run's recorded
// validation AUC give no interval.
func TestConfirmCostInterval(t *testing.T) {
	o, _ := fakeOptions(t, 0.3)
	o.scores = fakeDirScores(40, 0)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Rows[res.Recommended]
	if r.Key() != "toy_plan toy_plan_mix=0.1" {
		t.Fatalf("recommended %s", r.Key())
	}
	sum := 0.0
	for _, seed := range []uint64{1, 2, 3} {
		p, err := metrics.DeLongPaired(fakeScores(fakeFigures["none"][seed].val, 40).Scores,
			fakeScores(fakeFigures["toy_plan toy_plan_mix=0.1"][seed].val, 40).Scores, fakeScores(0.5, 40).Labels)
		if err != nil {
			t.Fatal(err)
		}
		sum += p.VarDiff / 2
	}
	se := math.Sqrt(sum / 3)
	lo, hi := costInterval([]float64{0.03, 0.02, 0.04}, se, 0.95)
	f := r.Seeds
	if math.Abs(f.CostSE-se) > 1e-12 || math.Abs(f.CostPILo-lo) > 1e-9 || math.Abs(f.CostPIHi-hi) > 1e-9 {
		t.Errorf("interval [%g, %g] se %g, want [%g, %g] se %g", f.CostPILo, f.CostPIHi, f.CostSE, lo, hi, se)
	}
	if !(lo < 0.02 && hi > 0.04) {
		t.Errorf("interval [%g, %g] does not hold the seeds' costs", lo, hi)
	}
	for name, want := range map[string]float64{"confirm_cost_pi95_lo": lo, "confirm_cost_pi95_hi": hi, "confirm_cost_se_paired": se} {
		v, err := strconv.ParseFloat(planColumn(t, o.Out, "toy_plan toy_plan_mix=0.1", name), 64)
		if err != nil || math.Abs(v-want) > 1e-12 {
			t.Errorf("plan.csv %s = %v (%v), want %g", name, v, err, want)
		}
	}
	if v := planColumn(t, o.Out, "none", "confirm_cost_pi95_lo"); v != "" {
		t.Errorf("the reference's interval column %q, want empty", v)
	}
	var pj search
	raw, err := os.ReadFile(filepath.Join(o.Out, SearchFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	if c := pj.CostInterval; c == nil || c.Setting != r.Legend || c.Seeds != 3 || math.Abs(c.Lo-lo) > 1e-12 || math.Abs(c.Hi-hi) > 1e-12 {
		t.Errorf("plan.json cost_interval %+v, want %s over 3 seeds [%g, %g]", c, r.Legend, lo, hi)
	}
	y, err := os.ReadFile(filepath.Join(o.Out, RecommendedFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := CostIntervalText(f); want == "" || !strings.Contains(string(y), want) {
		t.Errorf("recommended.yaml's head lacks %q:\n%s", want, y)
	}

	// Rerun, training nothing: the same interval (a plan directory read
	// again computes it from its runs). Then with scores that do not give
	// the recorded AUCs: none, and plan.json without it.
	res, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Rows[res.Recommended].Seeds; g.CostPILo != f.CostPILo || g.CostPIHi != f.CostPIHi {
		t.Errorf("rerun: [%g, %g], want [%g, %g]", g.CostPILo, g.CostPIHi, f.CostPILo, f.CostPIHi)
	}
	o.scores = fakeDirScores(40, 0.01)
	if res, err = Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if g := res.Rows[res.Recommended].Seeds; !math.IsNaN(g.CostPILo) || !math.IsNaN(g.CostSE) {
		t.Errorf("scores off the recorded AUCs: interval [%g, %g], want none", g.CostPILo, g.CostPIHi)
	}
	if raw, _ := os.ReadFile(filepath.Join(o.Out, SearchFile)); strings.Contains(string(raw), "cost_interval") {
		t.Errorf("plan.json keeps a cost interval the scores do not give:\n%s", raw)
	}
}
