package run

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
)

// freeRideConfig is a small run on a CSV table whose label is decided by
// the passive party's two columns (p1 + p2 > 0, 5% of the labels
// flipped); the active party's column is independent noise.
func freeRideConfig(t *testing.T) config.Config {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "signal.csv")
	rng := rand.New(rand.NewPCG(11, 12))
	var b strings.Builder
	b.WriteString("id,label,p1,p2,a1\n")
	for i := range 3000 {
		p1, p2, a1 := rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
		y := 0
		if p1+p2 > 0 {
			y = 1
		}
		if rng.Float64() < 0.05 {
			y = 1 - y
		}
		fmt.Fprintf(&b, "%d,%d,%.4f,%.4f,%.4f\n", i, y, p1, p2, a1)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Data, c.Format, c.Label, c.IDCol = path, data.FormatCSV, "label", "id"
	c.Numeric = []string{"p1", "p2", "a1"}
	c.PassiveColumns, c.ActiveColumns = []string{"p1", "p2"}, []string{"a1"}
	c.Batch, c.Epochs, c.LR, c.EvalEvery, c.EarlyStop = 100, 3, 1e-2, 20, 0
	c.Layers, c.Cut = []int{16, 8}, 2
	c.Attacks, c.Baseline, c.Select = []string{"norm"}, false, config.SelectLast
	c.Out = filepath.Join(dir, "run")
	return c
}

// TestReplayDetectorStopsAFreeRiderCleanly: a passive party replaying
// from step 5 is stopped by the replay detector at step 6, the first
// replayed batch (schedule batches are all 100 rows here); summary.json
// says why, and the models saved are loadable and are the ones of before
// that step. Honest runs of several seeds with the same detector never
// score above 0 and complete.
func TestReplayDetectorStopsAFreeRiderCleanly(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		cfg := freeRideConfig(t)
		cfg.Seed = seed
		cfg.Detectors, cfg.IntegrityStop = []string{"replay", "collapse"}, map[string]float64{"replay": 1}
		sum, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Truncated || sum.IntegrityAlarm != "" || sum.Integrity["replay"] != 0 {
			t.Errorf("honest seed %d: truncated %t alarm %q scores %v", seed, sum.Truncated, sum.IntegrityAlarm, sum.Integrity)
		}
		if _, ok := sum.Integrity["collapse"]; !ok {
			t.Errorf("honest seed %d: no collapse score in the summary", seed)
		}
	}

	cfg := freeRideConfig(t)
	cfg.FreeRide, cfg.FreeRideFrom = "replay", 5
	cfg.Detectors, cfg.IntegrityStop = []string{"replay"}, map[string]float64{"replay": 1}
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatalf("a detector's alarm should end the run cleanly: %v", err)
	}
	s, _ := readSummary(t, cfg.Out)
	if !s.Truncated || s.Steps != 6 || !strings.Contains(s.TruncatedReason, "replay") ||
		!strings.Contains(s.IntegrityAlarm, "step 6") || s.Integrity["replay"] != 1 || sum.Steps != 6 {
		t.Fatalf("summary: truncated %t steps %d reason %q alarm %q scores %v", s.Truncated, s.Steps, s.TruncatedReason, s.IntegrityAlarm, s.Integrity)
	}
	// The saved models load, and are those of six honest-to-the-model
	// steps: a fresh run to max_steps 6 saves the same bytes.
	ref := cfg
	ref.FreeRide, ref.Detectors, ref.IntegrityStop, ref.MaxSteps = "", nil, nil, 6
	ref.Out = filepath.Join(t.TempDir(), "ref")
	ref.FreeRide, ref.FreeRideFrom = "replay", 5 // the same embeddings up to step 5, none replayed by step 6
	if _, err := Train(context.Background(), ref, Options{}); err != nil {
		t.Fatal(err)
	}
	r := cfg
	r.Resolve()
	split, err := r.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	px, ax, err := r.SplitFeatures(split.Train.X)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{rundir.BottomModelFile, rundir.TopModelFile} {
		got, err1 := os.ReadFile(filepath.Join(cfg.Out, name))
		want, err2 := os.ReadFile(filepath.Join(ref.Out, name))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from the model after 6 steps", name)
		}
	}
	bottom, top, _, err := r.BuildSplitModels(px, ax)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadSaved(cfg.Out, bottom, top); err != nil {
		t.Errorf("the saved models do not load: %v", err)
	}
}

// TestContributionOfAFreeRider: on the table whose signal is the
// passive party's, an honest passive party's gain (validation AUC with
// its embedding minus without) is large and a constant-embedding one's is
// ≈ 0. The final evaluation's AUC without the passive is recomputed here
// from the saved models: the validation rows' embeddings replaced by
// their column means, through the top.
func TestContributionOfAFreeRider(t *testing.T) {
	for _, tc := range []struct {
		mode         string
		lo, hi       float64
		minGainAlarm bool
	}{{"", 0.2, 1, false}, {"constant", -0.02, 0.02, false}, {"noise", -0.08, 0.08, false}, {"constant", -1, 1, true}} {
		cfg := freeRideConfig(t)
		cfg.FreeRide, cfg.Contribution, cfg.Baseline = tc.mode, true, true
		if tc.minGainAlarm {
			cfg.MinPassiveGain = 0.05
		}
		sum, err := Train(context.Background(), cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.PassiveGainFinal == nil {
			t.Fatalf("%q: no passive_gain_final", tc.mode)
		}
		g := *sum.PassiveGainFinal
		t.Logf("%q: passive gain %.4f (val AUC %.4f), %d steps", tc.mode, g, *sum.ValAUCSelected, sum.Steps)
		if g < tc.lo || g > tc.hi {
			t.Errorf("%q: passive gain %.4f, want in [%v, %v]", tc.mode, g, tc.lo, tc.hi)
		}
		if tc.minGainAlarm {
			if !sum.Truncated || !strings.Contains(sum.IntegrityAlarm, "contribution") || sum.Steps != int64(cfg.EvalEvery) {
				t.Errorf("min gain: truncated %t at %d steps, alarm %q", sum.Truncated, sum.Steps, sum.IntegrityAlarm)
			}
			continue
		}
		// The gain over the baseline on the active party's own column
		// (noise here): large for the honest party, small for the others.
		b := sum.Baseline
		if b == nil || b.Columns != rundir.OwnColumns || b.ValAUC == nil || sum.GainOverOwnBaseline == nil ||
			math.Abs(*sum.GainOverOwnBaseline-(*sum.ValAUCSelected-*b.ValAUC)) > 1e-12 {
			t.Fatalf("%q: baseline %+v, gain over it %v", tc.mode, b, sum.GainOverOwnBaseline)
		}
		t.Logf("%q: gain over the own-column baseline %.4f", tc.mode, *sum.GainOverOwnBaseline)
		if over := *sum.GainOverOwnBaseline; (tc.mode == "") != (over > 0.2) {
			t.Errorf("%q: gain over the own-column baseline %.4f", tc.mode, over)
		}
		if tc.mode == "" {
			checkAUCWithout(t, cfg, *sum.ValAUCSelected-g)
		}
	}
}

// checkAUCWithout recomputes the validation AUC without the passive
// party's embedding from cfg's saved models and compares it with want.
func checkAUCWithout(t *testing.T, cfg config.Config, want float64) {
	t.Helper()
	r := cfg
	r.Resolve()
	split, err := r.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	split.SortByID()
	train, val := data.SplitValidation(split.Train, r.Seed, r.ValFrac)
	tpx, tax, err := r.SplitFeatures(train.X)
	if err != nil {
		t.Fatal(err)
	}
	bottom, top, _, err := r.BuildSplitModels(tpx, tax)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadSaved(cfg.Out, bottom, top); err != nil {
		t.Fatal(err)
	}
	px, ax, err := r.SplitFeatures(val.X)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]int, len(val.IDs))
	for i := range rows {
		rows[i] = i
	}
	var pb, ab data.Batch
	px.Gather(rows, &pb)
	ax.Gather(rows, &ab)
	e, err := bottom.Forward(&pb)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Cols
	mean := make([]float64, d)
	for i, x := range e.Data {
		mean[i%d] += float64(x) / float64(e.Rows)
	}
	m := tensor.New(e.Rows, d)
	for i := range m.Data {
		m.Data[i] = float32(mean[i%d])
	}
	logits, err := top.Forward(m, &ab)
	if err != nil {
		t.Fatal(err)
	}
	got := logitAUC(logits, val.Labels)
	if math.Abs(got-want) > 1e-6 {
		t.Errorf("validation AUC without the passive party: recomputed %.6f, the run's %.6f", got, want)
	}
}

// loadSaved loads a run directory's saved bottom and top models into
// bottom and top.
func loadSaved(dir string, bottom, top interface{ Load(io.Reader) error }) error {
	for name, m := range map[string]interface{ Load(io.Reader) error }{rundir.BottomModelFile: bottom, rundir.TopModelFile: top} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = m.Load(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
