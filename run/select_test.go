package run

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/rundir"
)

func readSummary(t *testing.T, dir string) (rundir.Summary, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s rundir.Summary
	var m map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// TestSelectedModelIsTheBestOnValidation trains with a validation split
// and checks, independently of the recorder, that the selected step is
// the arg-max of the validation AUCs in eval.jsonl, that the reported test
// figures are that evaluation's, and that the saved models score the
// validation rows with exactly that AUC (so the files hold the selected
// model, not the last one).
func TestSelectedModelIsTheBestOnValidation(t *testing.T) {
	cfg := smallConfig(t)
	cfg.SynthRows, cfg.Epochs, cfg.EvalEvery, cfg.EarlyStop, cfg.LR = 6000, 4, 5, 0, 1e-2
	cfg.Attacks = []string{"norm"}
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	evals := readLines(t, filepath.Join(cfg.Out, rundir.EvalFile))
	best, bestStep, bestTest, last := -1.0, int64(-1), 0.0, int64(0)
	for _, e := range evals {
		v, ok := e["val_auc"].(float64)
		if !ok {
			t.Fatalf("evaluation without val_auc: %v", e)
		}
		if v > best {
			best, bestStep, bestTest = v, int64(e["step"].(float64)), e["test_auc"].(float64)
		}
		last = int64(e["step"].(float64))
	}
	if sum.Select != config.SelectBest || sum.SelectedStep != bestStep || sum.TestAUCSelected != bestTest || *sum.ValAUCSelected != best {
		t.Fatalf("selected step %d (val %v, test %v) by %s; eval.jsonl's best validation AUC %v is at step %d (test %v)",
			sum.SelectedStep, sum.ValAUCSelected, sum.TestAUCSelected, sum.Select, best, bestStep, bestTest)
	}
	if bestStep == last {
		t.Fatalf("the best validation AUC is at the last step %d: the test cannot tell the saved model from the last", last)
	}
	if sum.ValRows == 0 || sum.ValFrac != config.DefaultValFrac {
		t.Errorf("val rows %d, val frac %v", sum.ValRows, sum.ValFrac)
	}
	// The validation positives: the training rows' positive rate within
	// four binomial standard errors (the rows are drawn from one table).
	if p, n := sum.TrainPosRate, float64(sum.ValRows); math.Abs(float64(sum.ValPositives)/n-p) > 4*math.Sqrt(p*(1-p)/n) || sum.ValPositives == 0 {
		t.Errorf("%d positives among %d validation rows; the training rows have %.3f", sum.ValPositives, sum.ValRows, p)
	}
	_, m := readSummary(t, cfg.Out)
	for _, k := range []string{"test_auc_best", "test_auc_final", "best_step", "test_auc_best_note", "test_auc_selected", "val_auc_best", "baseline", "train_loss_first"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary.json has no %q", k)
		}
	}

	// Score the validation rows with the saved models.
	r := cfg
	r.Resolve()
	split, err := r.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	split.SortByID()
	train, val := data.SplitValidation(split.Train, r.Seed, r.ValFrac)
	bottom, top, _, err := r.BuildModels(train.X)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		load func(*os.File) error
	}{{rundir.BottomModelFile, func(f *os.File) error { return bottom.Load(f) }}, {rundir.TopModelFile, func(f *os.File) error { return top.Load(f) }}} {
		fh, err := os.Open(filepath.Join(cfg.Out, f.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.load(fh); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	rows := make([]int, len(val.IDs))
	for i := range rows {
		rows[i] = i
	}
	var b data.Batch
	val.X.Gather(rows, &b)
	e, err := bottom.Forward(&b)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := top.Forward(e, &b)
	if err != nil {
		t.Fatal(err)
	}
	auc := logitAUC(logits, val.Labels)
	if math.Abs(auc-best) > 1e-9 {
		t.Fatalf("the saved models give validation AUC %v, the selected evaluation %v", auc, best)
	}
	// ValidationScores (the plan's reload) gives the same rows, scores in
	// the logits' order, and the selected evaluation's AUC.
	vs, err := ValidationScores(cfg.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vs.IDs, val.IDs) || !slices.Equal(vs.Labels, val.Labels) || vs.TestRows != len(split.Test.IDs) {
		t.Fatalf("ValidationScores: %d rows, %d test rows; want the %d validation rows, %d test rows", len(vs.IDs), vs.TestRows, len(val.IDs), len(split.Test.IDs))
	}
	if a, _ := metrics.AUC(vs.Scores, vs.Labels, nil); math.Abs(a-best) > 1e-9 {
		t.Errorf("ValidationScores' AUC %v, the selected evaluation %v", a, best)
	}
	for i := range logits {
		if p := 1 / (1 + math.Exp(-float64(logits[i]))); math.Abs(p-vs.Scores[i]) > 1e-6 {
			t.Fatalf("row %d: score %v, sigmoid of the logit %v", i, vs.Scores[i], p)
		}
	}
}

// TestEarlyStopping: with a large learning rate the validation AUC stops
// improving; training ends exactly EarlyStop evaluations after the best.
func TestEarlyStopping(t *testing.T) {
	cfg := smallConfig(t)
	cfg.SynthRows, cfg.Epochs, cfg.EvalEvery, cfg.EarlyStop, cfg.LR = 6000, 30, 5, 3, 3e-2
	cfg.Attacks = []string{"norm"}
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	evals := readLines(t, filepath.Join(cfg.Out, rundir.EvalFile))
	planned := int64(cfg.Epochs) * int64((sum.TrainRows+cfg.Batch-1)/cfg.Batch)
	if !sum.EarlyStopped || sum.Steps >= planned || sum.Truncated {
		t.Fatalf("early stopped %v after %d of %d steps (truncated %v)", sum.EarlyStopped, sum.Steps, planned, sum.Truncated)
	}
	after := 0
	for _, e := range evals {
		if int64(e["step"].(float64)) > sum.SelectedStep {
			after++
		}
	}
	if after != cfg.EarlyStop || int64(evals[len(evals)-1]["step"].(float64)) != sum.Steps {
		t.Fatalf("%d evaluations after the selected step %d, want %d; last evaluation at step %v of %d",
			after, sum.SelectedStep, cfg.EarlyStop, evals[len(evals)-1]["step"], sum.Steps)
	}
}

// writeTable writes a CSV table drawn from a logistic model: numeric
// columns on very different scales (one skewed), two categorical columns
// and an irrelevant one, about 10% positives.
func writeTable(t *testing.T, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(42, 1))
	var sb strings.Builder
	sb.WriteString("age,income,score,region,plan,noise,label\n")
	regions := []string{"north", "south", "east", "west", "centre"}
	plans := []string{"basic", "plus", "pro"}
	for range n {
		age := 18 + rng.Float64()*60
		income := math.Exp(10 + rng.NormFloat64()) // skewed
		score := rng.NormFloat64()
		r, p := rng.IntN(len(regions)), rng.IntN(len(plans))
		z := -3.2 + 0.04*(age-48) + 0.6*(math.Log(income)-10) + 0.8*score + []float64{0.8, -0.4, 0, 0.3, -0.7}[r] + []float64{-0.5, 0.2, 0.9}[p]
		y := "no"
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			y = "yes"
		}
		fmt.Fprintf(&sb, "%.1f,%.2f,%.4f,%s,%s,%d,%s\n", age, income, score, regions[r], plans[p], rng.IntN(1000), y)
	}
	path := filepath.Join(t.TempDir(), "table.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDefaultsLearn runs what a new user runs — the defaults, a CSV file,
// its label and positive value — and checks that the split model learns
// (test AUC well above 0.5) and comes within 0.03 of the logistic
// baseline fitted on the same columns and split, which the data's
// logistic model makes the right model here.
func TestDefaultsLearn(t *testing.T) {
	cfg := config.Default()
	cfg.Data, cfg.Format, cfg.Label, cfg.Positive = writeTable(t, 3000), "csv", "label", config.Values{"yes"}
	cfg.Out = t.TempDir()
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := sum.Baseline
	if b == nil || b.TestAUC == nil || b.ValAUC == nil {
		t.Fatalf("no baseline AUCs: %+v", b)
	}
	t.Logf("split model: test AUC %.4f (val %.4f, step %d of %d); baseline test %.4f, val %.4f", sum.TestAUCSelected, *sum.ValAUCSelected, sum.SelectedStep, sum.Steps, *b.TestAUC, *b.ValAUC)
	if sum.TestAUCSelected < 0.65 {
		t.Errorf("the default run reaches test AUC %.4f: it did not learn", sum.TestAUCSelected)
	}
	if sum.TestAUCSelected < *b.TestAUC-0.03 {
		t.Errorf("the default run's test AUC %.4f is more than 0.03 below the baseline's %.4f", sum.TestAUCSelected, *b.TestAUC)
	}
	if len(sum.Warnings) > 0 {
		t.Errorf("warnings: %v", sum.Warnings)
	}
	raw, err := os.ReadFile(filepath.Join(cfg.Out, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	back, err := config.LoadFile(filepath.Join(cfg.Out, rundir.ConfigFile), config.Default())
	if err != nil {
		t.Fatalf("config.yaml does not load back: %v\n%s", err, raw)
	}
	if !slices.Contains(back.Auto, "lr") || back.LR != config.AutoLR(back.AutoRows) || back.Batch != config.AutoBatch(back.AutoRows) {
		t.Errorf("config.yaml does not give the chosen values and say they were chosen:\n%s", raw)
	}
}

// TestWarnings: a learning rate too small to move the model leaves the
// split model below the baseline, and the summary says so.
func TestWarnings(t *testing.T) {
	cfg := config.Default()
	cfg.Data, cfg.Format, cfg.Label, cfg.Positive = writeTable(t, 1500), "csv", "label", config.Values{"yes"}
	cfg.LR, cfg.Epochs = 1e-7, 1
	cfg.Out = t.TempDir()
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(sum.Warnings, "\n")
	if !strings.Contains(joined, "below the logistic baseline") {
		t.Errorf("warnings %q, want the split model below the baseline", joined)
	}
}

// TestEvalSlicesChangeNothing: an evaluation message larger than the
// slices the parties forward it in (8,192 rows) and messages smaller than
// one slice (1,000 rows) give the same evaluation records, number for
// number.
func TestEvalSlicesChangeNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("two training runs; the race detector's -short pass leaves them out")
	}
	var got [2][]map[string]any
	for k, eb := range []int{8192, 1000} {
		cfg := smallConfig(t)
		cfg.SynthRows, cfg.Epochs, cfg.EvalEvery, cfg.EvalBatch = 12000, 1, 20, eb // about 2,300 rows evaluated
		cfg.Attacks = []string{"norm"}
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatal(err)
		}
		got[k] = readLines(t, filepath.Join(cfg.Out, rundir.EvalFile))
	}
	a, _ := json.Marshal(got[0])
	b, _ := json.Marshal(got[1])
	if len(got[0]) < 2 || string(a) != string(b) {
		t.Fatalf("evaluation records differ between 8,192-row and 1,000-row messages:\n%s\n%s", a, b)
	}
}

// logitAUC is the exact AUC of the sigmoid of logits against labels, as
// an evaluation scores a split.
func logitAUC(logits []float32, labels []uint8) float64 {
	probs := make([]float32, len(logits))
	nn.Sigmoid(probs, logits)
	scores := make([]float64, len(probs))
	for i, p := range probs {
		scores[i] = float64(p)
	}
	auc, _ := metrics.AUC(scores, labels, nil)
	return auc
}
