package run

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/rundir"
)

// partiesConfig is a small two-passive run on synthetic Criteo-shaped
// data: party "inf" holds the label-bearing columns of the generator
// (data/synth.go's tilted groups), party "noise" columns drawn the same
// for both classes; the MLP's active party reads no column of its own.
func partiesConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.SynthRows, c.Batch, c.Epochs, c.LR, c.EvalEvery = 12000, 256, 2, 3e-3, 20
	c.Model, c.Layers, c.Cut, c.Baseline = "mlp", []int{16, 8, 8}, 2, false
	c.Attacks = []string{"norm", "cosine"}
	c.Contribution = true
	c.Parties = []config.Party{
		{Name: "inf", Columns: []string{"C1", "C2", "C5", "C8", "C11"}},
		{Name: "noise", Columns: []string{"C3", "C4", "C6", "C7", "C10"}},
	}
	c.Out = t.TempDir()
	return c
}

// TestPartiesRecordEachParty runs two passive parties, one informative
// and one noise, and checks the per-party records: every batch's leak
// for each party and the colluding pair, the leave-one-party-out
// contributions (the informative party's larger), each party's bottom.
// Once with the columns named (MLP, the active party without columns),
// once split by key synth_parties (Wide&Deep, the active party holding
// noise columns).
func TestPartiesRecordEachParty(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two passive parties")
	}
	synth := func(c *config.Config) {
		c.Model, c.Layers, c.Parties, c.SynthParties = "wdl", []int{16, 8, 8}, nil, 2
	}
	for _, tc := range []struct {
		name, inf, noise string
		edit             func(*config.Config)
	}{{"columns", "inf", "noise", func(*config.Config) {}}, {"synth_parties", "p1", "p2", synth}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := partiesConfig(t)
			tc.edit(&cfg)
			s, err := Train(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			pair := tc.inf + "+" + tc.noise
			for _, name := range []string{tc.inf, tc.noise, pair} {
				p, ok := s.Parties[name]
				if !ok || len(p.Leak) == 0 {
					t.Fatalf("summary has no figures of %s: %+v", name, s.Parties)
				}
			}
			inf, noise := s.Parties[tc.inf], s.Parties[tc.noise]
			if inf.GainSelected == nil || noise.GainSelected == nil {
				t.Fatalf("no leave-one-party-out gain: %+v %+v", inf, noise)
			}
			t.Logf("selected val AUC %.4f; gain of %s %.4f, of %s %.4f", *s.ValAUCSelected, tc.inf, *inf.GainSelected, tc.noise, *noise.GainSelected)
			if !(*inf.GainSelected > *noise.GainSelected+0.02) {
				t.Errorf("the informative party's gain %.4f is not clearly above the noise party's %.4f", *inf.GainSelected, *noise.GainSelected)
			}
			lines := readLines(t, filepath.Join(cfg.Out, rundir.BatchesFile))
			for _, l := range lines[:3] {
				parties, ok := l["parties"].(map[string]any)
				if !ok || len(parties) != 3 {
					t.Fatalf("batch record without the three audited views: %v", l)
				}
				for name, v := range parties {
					leak := v.(map[string]any)
					if _, ok := leak["norm/cut"]; !ok {
						t.Fatalf("%s's leak has no norm/cut: %v", name, leak)
					}
				}
			}
			for _, f := range []string{rundir.BottomModelFile, PartyBottomFile(tc.noise), rundir.TopModelFile} {
				if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
					t.Error(err)
				}
			}
			if math.IsNaN(s.TestAUCSelected) || s.TestAUCSelected < 0.6 {
				t.Errorf("test AUC %.4f", s.TestAUCSelected)
			}
		})
	}
}

// stepLeak returns batch step's leak AUC of attack/layer key for party
// (a name, or "" for the run's own figure) in run dir.
func stepLeak(t *testing.T, dir string, step int, party, key string) float64 {
	t.Helper()
	l := readLines(t, filepath.Join(dir, rundir.BatchesFile))[step]
	leak := l["leak"].(map[string]any)
	if party != "" {
		leak = l["parties"].(map[string]any)[party].(map[string]any)
	}
	v, ok := leak[key].(float64)
	if !ok {
		t.Fatalf("step %d: %s has no %s figure: %v", step, party, key, leak)
	}
	return v
}

// TestPartiesSumGivesEveryPartyTheSameGradient checks three parties under
// aggregation sum: each receives the whole gradient, so every party's
// and every subset's leak of a batch is the run's.
func TestPartiesSumGivesEveryPartyTheSameGradient(t *testing.T) {
	cfg := partiesConfig(t)
	cfg.Aggregation, cfg.Contribution, cfg.MaxSteps, cfg.ValFrac = config.AggregationSum, false, 6, 0
	cfg.Attacks = []string{"norm"}
	cfg.Parties = append(cfg.Parties, config.Party{Columns: []string{"I1", "I2", "C12"}})
	s, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Parties) != 7 {
		t.Fatalf("%d audited views, want 3 parties and 4 subsets: %v", len(s.Parties), s.Parties)
	}
	for step := range 6 {
		want := stepLeak(t, cfg.Out, step, "", "norm/cut")
		for name := range s.Parties {
			if got := stepLeak(t, cfg.Out, step, name, "norm/cut"); got != want {
				t.Errorf("step %d: %s's norm leak %.6f, the run's %.6f", step, name, got, want)
			}
		}
	}
}

// TestPartiesProtectEachBlock gives party "inf" a protection of its own
// (max_norm) and party "noise" none: at the first step, where both runs
// have the same models, the noise party's leak is the unprotected run's
// and the informative party's is not.
func TestPartiesProtectEachBlock(t *testing.T) {
	leaks := map[string][2]float64{}
	for _, protected := range []bool{false, true} {
		cfg := partiesConfig(t)
		cfg.MaxSteps, cfg.Contribution, cfg.ValFrac, cfg.Attacks = 3, false, 0, []string{"norm"}
		if protected {
			cfg.Parties[0].Protect = "max_norm"
		}
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		leaks[map[bool]string{false: "none", true: "max_norm"}[protected]] = [2]float64{
			stepLeak(t, cfg.Out, 0, "inf", "norm/cut"), stepLeak(t, cfg.Out, 0, "noise", "norm/cut")}
	}
	if leaks["none"][1] != leaks["max_norm"][1] {
		t.Errorf("the unprotected party's first leak changed with the other's protection: %v", leaks)
	}
	if leaks["none"][0] == leaks["max_norm"][0] {
		t.Errorf("the protected party's first leak is the unprotected one: %v", leaks)
	}
	t.Logf("first-step norm leaks (inf, noise): %v", leaks)
}

// TestPartiesMarvellHoldsEachPartysLeak runs two parties without and with
// Marvell (s = 4, applied to each party's block): each party's mean norm
// leak falls as a single party's does.
func TestPartiesMarvellHoldsEachPartysLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four runs")
	}
	mean := map[string]map[string]float64{}
	for _, p := range []string{"none", "marvell"} {
		cfg := partiesConfig(t)
		cfg.Contribution, cfg.Attacks, cfg.Epochs = false, []string{"norm"}, 1
		if p == "marvell" {
			cfg.Protect, cfg.Params = "marvell", map[string]float64{"marvell_s": 4}
		}
		s, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mean[p] = map[string]float64{}
		for _, name := range []string{"inf", "noise", "inf+noise"} {
			mean[p][name] = s.Parties[name].Leak["norm/cut"].Mean
		}
	}
	t.Logf("mean norm leak: %v", mean)
	for _, name := range []string{"inf", "noise", "inf+noise"} {
		if !(mean["marvell"][name] < mean["none"][name]-0.05) {
			t.Errorf("%s: Marvell's mean norm leak %.3f is not clearly below the unprotected %.3f", name, mean["marvell"][name], mean["none"][name])
		}
	}
}

// TestPartiesDeterministic runs the same two-party configuration twice,
// at 1 and 4 cores (the parties' goroutines interleave differently), and
// compares every batch's loss and leak figures and the saved models.
func TestPartiesDeterministic(t *testing.T) {
	var got []map[string]string
	var lines [][]map[string]any
	for _, procs := range []int{1, 4} {
		cfg := partiesConfig(t)
		cfg.MaxSteps = 30
		old := runtime.GOMAXPROCS(procs)
		_, err := Train(context.Background(), cfg, Options{})
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, files(t, cfg.Out))
		lines = append(lines, readLines(t, filepath.Join(cfg.Out, rundir.BatchesFile)))
	}
	for _, f := range []string{rundir.EvalFile, rundir.BottomModelFile, PartyBottomFile("noise"), rundir.TopModelFile} {
		if got[0][f] != got[1][f] || got[0][f] == "" {
			t.Errorf("%s differs between two runs of one configuration (or is empty)", f)
		}
	}
	if len(lines[0]) != 30 || len(lines[1]) != 30 {
		t.Fatalf("%d and %d batches, want 30", len(lines[0]), len(lines[1]))
	}
	for i := range lines[0] {
		for _, key := range []string{"loss", "leak", "parties"} {
			a, _ := json.Marshal(lines[0][i][key])
			b, _ := json.Marshal(lines[1][i][key])
			if string(a) != string(b) {
				t.Fatalf("batch %d: %s %s, then %s", i, key, a, b)
			}
		}
	}
}

// TestPartiesStoppedBySignal stops a two-party run by a signal after
// evaluations: every party's bottom and the top are saved, the summary
// is marked truncated naming the signal, config.yaml holds the parties,
// and running the configuration again finishes as an uninterrupted run.
func TestPartiesStoppedBySignal(t *testing.T) {
	cfg := partiesConfig(t)
	cfg.Epochs = 1
	want, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Out = t.TempDir()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	_, err = Train(ctx, cfg, Options{OnBatch: func(b rundir.BatchRecord) {
		if b.Step == 25 {
			cancel(&rundir.Stopped{Signal: "SIGINT"})
		}
	}})
	if rundir.SignalOf(err) != "SIGINT" {
		t.Fatalf("Train stopped by SIGINT: %v", err)
	}
	s := summaryOf(t, cfg.Out)
	if !s.Truncated || s.Signal != "SIGINT" || s.Steps < 25 || s.Steps >= want.Steps || len(s.Parties) != 3 {
		t.Errorf("summary: truncated %v, signal %q, %d steps of %d, %d audited views", s.Truncated, s.Signal, s.Steps, want.Steps, len(s.Parties))
	}
	for _, f := range []string{rundir.BottomModelFile, PartyBottomFile("noise"), rundir.TopModelFile} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
	saved, err := config.LoadFile(filepath.Join(cfg.Out, rundir.ConfigFile), config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Parties) != 2 || saved.Parties[1].Name != "noise" || saved.Parties[1].Columns[0] != "C3" {
		t.Errorf("config.yaml's parties %+v", saved.Parties)
	}
	got, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatalf("running the interrupted run again: %v", err)
	}
	if got.TestAUCFinal != want.TestAUCFinal || got.Steps != want.Steps || got.Truncated {
		t.Errorf("the run again: test AUC %v, %d steps; uninterrupted %v, %d", got.TestAUCFinal, got.Steps, want.TestAUCFinal, want.Steps)
	}
}

// TestPartiesGated runs the informative and the noise party under
// aggregation gated: the run learns (test AUC well above chance), the log
// gives the parties' learned weights, which sum to 1 and favour the
// informative party, and the per-party figures are recorded as under
// concat.
func TestPartiesGated(t *testing.T) {
	cfg := partiesConfig(t)
	cfg.Aggregation = config.AggregationGated
	cfg.Layers = []int{16, 8, 8} // every party's cut is 8 wide
	var log strings.Builder
	s, err := Train(context.Background(), cfg, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if s.TestAUCSelected < 0.7 {
		t.Errorf("test AUC %v, want above 0.7", s.TestAUCSelected)
	}
	var inf, noise float64
	line := log.String()
	i := strings.Index(line, "learned weights after the last step:")
	if i < 0 {
		t.Fatalf("no learned weights in the log:\n%s", line)
	}
	if _, err := fmt.Sscanf(line[i:], "learned weights after the last step: inf %f noise %f", &inf, &noise); err != nil {
		t.Fatalf("reading the weights: %v in %q", err, line[i:])
	}
	t.Logf("learned weights: inf %.4f, noise %.4f; test AUC %.4f", inf, noise, s.TestAUCSelected)
	if math.Abs(inf+noise-1) > 2e-4 || inf <= noise {
		t.Errorf("learned weights inf %v noise %v: want a sum of 1, the informative party's larger", inf, noise)
	}
	for _, name := range []string{"inf", "noise", "inf+noise"} {
		if _, ok := s.Parties[name]; !ok {
			t.Errorf("summary has no figures for %s: %v", name, s.Parties)
		}
	}
	if g := s.Parties["inf"].GainSelected; g == nil || *g <= 0 {
		t.Errorf("the informative party's contribution %v, want above 0", g)
	}
}

// TestPartiesModelCompletion runs model completion on each passive
// party's bottom and on the colluding pair's pooled bottoms: every view
// has its figures at every evaluation and in the summary, the informative
// party's bottom completes the labels far better than the noise party's,
// and the pair's pooled bottoms at least about as well as the
// informative party's alone.
func TestPartiesModelCompletion(t *testing.T) {
	cfg := partiesConfig(t)
	cfg.Attacks = []string{"norm", "completion"}
	cfg.KnownLabels = 100
	s, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	auc := map[string]float64{}
	for _, name := range []string{"inf", "noise", "inf+noise"} {
		p, ok := s.Parties[name]
		if !ok {
			t.Fatalf("no figures for %s", name)
		}
		v, ok := p.EvalAttacksFinal["completion/auc"]
		if !ok {
			t.Fatalf("%s: no completion AUC in %v", name, p.EvalAttacksFinal)
		}
		if b := p.EvalAttacksBest["completion/auc"]; b < v {
			t.Errorf("%s: best completion AUC %v below the final %v", name, b, v)
		}
		auc[name] = v
	}
	t.Logf("completion AUC: inf %.4f, noise %.4f, pooled %.4f", auc["inf"], auc["noise"], auc["inf+noise"])
	if auc["inf"] < 0.7 || math.Abs(auc["noise"]-0.5) > 0.1 || auc["inf+noise"] < auc["inf"]-0.03 {
		t.Errorf("completion AUC inf %.4f (want ≥ 0.7), noise %.4f (want ≈ ½), pooled %.4f (want ≳ inf's)", auc["inf"], auc["noise"], auc["inf+noise"])
	}
	for _, e := range readLines(t, filepath.Join(cfg.Out, rundir.EvalFile)) {
		if pa, _ := e["party_attacks"].(map[string]any); len(pa) != 3 {
			t.Errorf("evaluation at step %v has model-attack figures for %d views, want 3", e["step"], len(pa))
		}
	}
}
