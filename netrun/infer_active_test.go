package netrun

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// csvFile writes the rows with IDs in [lo, hi) of a fixed synthetic table:
// columns id, label and four categorical columns, the label depending on
// two of them. The same ID always gets the same row, so files with
// different ID ranges hold the same examples where they overlap.
func csvFile(t testing.TB, lo, hi uint64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,label,c1,c2,c3,c4\n")
	for id := lo; id < hi; id++ {
		r := rand.New(rand.NewPCG(id, 77))
		c := [4]int{r.IntN(8), r.IntN(8), r.IntN(50), r.IntN(3)}
		y := 0
		if c[0]+c[1] > 9 || r.Float64() < 0.1 {
			y = 1
		}
		fmt.Fprintf(&b, "%d,%d,a%d,b%d,c%d,d%d\n", id, y, c[0], c[1], c[2], c[3])
	}
	path := filepath.Join(t.TempDir(), fmt.Sprintf("rows-%d-%d.csv", lo, hi))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func csvConfig(path, out string) config.Config {
	c := smallConfig(path, out)
	c.Format, c.Label, c.IDCol = "csv", "label", "id"
	c.Protect, c.Params, c.Attacks, c.Epochs = "none", nil, []string{"norm"}, 2
	return c
}

// TestPSITrainsOnTheIntersection trains two parties whose files hold
// different ID ranges ([0, 1200) and [400, 1600)) and checks that the run
// is bit-identical to an in-process run on a file of exactly the shared
// IDs [400, 1200): the same rows, split, schedule and results.
func TestPSITrainsOnTheIntersection(t *testing.T) {
	root := t.TempDir()
	shared := csvConfig(csvFile(t, 400, 1200), filepath.Join(root, "inproc"))
	want, err := run.Train(context.Background(), shared, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := partyConfigs(shared, root, newTestPKI(t))
	act.Data, pas.Data = csvFile(t, 0, 1200), csvFile(t, 400, 1600)
	got := pair(t, act, pas)
	if got.TrainRows+got.ValRows+got.TestRows != 800 || got.ValRows == 0 {
		t.Fatalf("trained on %d+%d+%d (train, validation, test) rows, the intersection has 800", got.TrainRows, got.ValRows, got.TestRows)
	}
	if got.ValAUCBest == nil || want.ValAUCBest == nil || *got.ValAUCBest != *want.ValAUCBest || got.ValRows != want.ValRows {
		t.Fatalf("the validation split differs: %d rows, best AUC %v networked; %d rows, %v in process", got.ValRows, got.ValAUCBest, want.ValRows, want.ValAUCBest)
	}
	if b := got.Baseline; b == nil || b.Columns != "active party's own" || b.TestAUC == nil || b.TrainRows != got.TrainRows {
		t.Fatalf("the active party's baseline on its own columns is missing: %+v", b)
	}
	if got.TrainRows != want.TrainRows || got.TestRows != want.TestRows || got.Steps != want.Steps ||
		got.TestAUCFinal != want.TestAUCFinal || got.TrainLossFinal != want.TrainLossFinal {
		t.Fatalf("networked run on the intersection differs from the in-process run on the shared rows:\n got %+v\nwant %+v", got, want)
	}
}

// readScores reads an id,score file.
func readScores(t *testing.T, path string) ([]uint64, []float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var ids []uint64
	var ps []float64
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			if sc.Text() != "id,score" {
				t.Fatalf("header %q", sc.Text())
			}
			continue
		}
		a, b, _ := strings.Cut(sc.Text(), ",")
		id, err1 := strconv.ParseUint(a, 10, 64)
		p, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %d: %q", i+1, sc.Text())
		}
		ids, ps = append(ids, id), append(ps, p)
	}
	return ids, ps
}

// pairAUC is the AUC by counting pairs (ties count one half).
func pairAUC(scores []float64, labels []uint8) float64 {
	var num, den float64
	for i := range scores {
		for j := range scores {
			if labels[i] == 1 && labels[j] == 0 {
				den++
				switch {
				case scores[i] > scores[j]:
					num++
				case scores[i] == scores[j]:
					num += 0.5
				}
			}
		}
	}
	return num / den
}

// serveScore runs one scoring session in this process.
func serveScore(t *testing.T, act, pas Config, so ServeOptions, sc ScoreOptions) (*ServeResult, *ScoreResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	act.Addr = "127.0.0.1:0"
	addr := make(chan string, 1)
	type result struct {
		r   *ServeResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Serve(ctx, act, so, Options{Logger: testLogger(t), Ready: func(a string) { addr <- a }})
		done <- result{r, err}
	}()
	select {
	case pas.Addr = <-addr:
	case r := <-done:
		t.Fatalf("serve: %v", r.err)
	}
	res, err := Score(ctx, pas, sc, Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("score: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("serve: %v", r.err)
	}
	return r.r, res
}

// TestServeScoresLikeTheFinalEvaluation trains over mTLS, then scores the
// test split through `serve`/`score`: the AUC and mean BCE of the active
// party's scores, computed here from the file's labels, equal the final
// evaluation recorded during training; the passive gets scores only with
// ShareScores, and they equal the active's; rows the active does not hold
// are reported, not scored.
func TestServeScoresLikeTheFinalEvaluation(t *testing.T) {
	root := t.TempDir()
	base := csvConfig(csvFile(t, 0, 1500), "")
	act, pas := partyConfigs(base, root, newTestPKI(t))
	sum := pair(t, act, pas)

	full, label := testLabels(t, base)

	out := filepath.Join(root, "scores-active.csv")
	sr, pr := serveScore(t, act, pas, ServeOptions{Out: out, Sessions: 1}, ScoreOptions{Out: filepath.Join(root, "p.csv")})
	if pr.Shared || pr.Scored != len(full.Test.IDs) || pr.Unscored != 0 || sr.Scored != int64(pr.Scored) {
		t.Fatalf("score result %+v, serve result %+v, %d test rows", pr, sr, len(full.Test.IDs))
	}
	if _, err := os.Stat(filepath.Join(root, "p.csv")); !os.IsNotExist(err) {
		t.Fatalf("the passive wrote scores it must not have: %v", err)
	}
	ids, ps := readScores(t, out)
	ys := make([]uint8, len(ids))
	var bce float64
	for i, id := range ids {
		y, ok := label[id]
		if !ok {
			t.Fatalf("scored ID %d is not a test ID", id)
		}
		ys[i] = y
		p := min(max(ps[i], 1e-7), 1-1e-7)
		if y == 1 {
			bce -= math.Log(p)
		} else {
			bce -= math.Log(1 - p)
		}
	}
	bce /= float64(len(ids))
	if auc := pairAUC(ps, ys); math.Abs(auc-sum.TestAUCFinal) > 1e-9 || math.Abs(bce-sum.TestLossFinal) > 1e-5 {
		t.Fatalf("scores give AUC %.9f, BCE %.6f; training's final evaluation %.9f, %.6f", auc, bce, sum.TestAUCFinal, sum.TestLossFinal)
	}

	// Shared scores, and a passive file with rows the active lacks.
	pas.Data = csvFile(t, 0, 1700)
	pas2 := filepath.Join(root, "scores-passive.csv")
	unscored := filepath.Join(root, "unscored.txt")
	_, pr = serveScore(t, act, pas, ServeOptions{Out: out, ShareScores: true, Sessions: 1},
		ScoreOptions{Out: pas2, Split: "all", Unscored: unscored})
	if !pr.Shared || pr.Scored != 1500 || pr.Unscored != 200 {
		t.Fatalf("score result %+v, want 1500 scored and 200 unscored", pr)
	}
	aIDs, aPs := readScores(t, out)
	pIDs, pPs := readScores(t, pas2)
	if !reflect.DeepEqual(aIDs, pIDs) || !reflect.DeepEqual(aPs, pPs) || len(aIDs) != 1500 {
		t.Fatalf("shared scores differ from the active's (%d vs %d rows)", len(pIDs), len(aIDs))
	}
	raw, err := os.ReadFile(unscored)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(raw))
	if len(lines) != 200 || lines[0] != "1500" || lines[199] != "1699" {
		t.Fatalf("unscored IDs: %d lines, first %v", len(lines), lines[:min(3, len(lines))])
	}
}

// TestSettingsFromTheDataAgree leaves the batch, epochs, learning rate and
// evaluation cadence to the data: each party chooses them alone from the
// aligned training rows, and the run equals the in-process run on the
// shared rows, which chose them from the same count.
func TestSettingsFromTheDataAgree(t *testing.T) {
	root := t.TempDir()
	shared := csvConfig(csvFile(t, 400, 1200), filepath.Join(root, "inproc"))
	shared.Batch, shared.Epochs, shared.LR, shared.EvalEvery, shared.MaxSteps = 0, 0, 0, -1, 40
	// A two-process run starts its wide part at random (key wide_start);
	// the in-process run is given the same start to be comparable.
	shared.WideStart = config.WideStartRandom
	want, err := run.Train(context.Background(), shared, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := partyConfigs(shared, root, newTestPKI(t))
	act.Data, pas.Data = csvFile(t, 0, 1200), csvFile(t, 400, 1600)
	got := pair(t, act, pas)
	if got.Steps != want.Steps || got.TestAUCFinal != want.TestAUCFinal || got.TrainLossFinal != want.TrainLossFinal {
		t.Fatalf("networked run differs from the in-process run:\n got %+v\nwant %+v", got, want)
	}
	var chosen []config.Config
	for _, dir := range []string{shared.Out, act.Out, pas.Out} {
		c, err := LoadConfigFile(filepath.Join(dir, rundir.ConfigFile), Default())
		if err != nil {
			t.Fatal(err)
		}
		chosen = append(chosen, c.Config)
	}
	for i, c := range chosen {
		if c.Batch != config.AutoBatch(c.AutoRows) || c.LR != config.AutoLR(c.AutoRows) || !slices.Contains(c.Auto, "batch") ||
			c.Batch != chosen[0].Batch || c.Epochs != chosen[0].Epochs || c.EvalEvery != chosen[0].EvalEvery || c.AutoRows != got.TrainRows {
			t.Errorf("config %d: batch %d epochs %d lr %g eval every %d from %d rows (auto %v); in-process: %d %d %g %d; %d training rows",
				i, c.Batch, c.Epochs, c.LR, c.EvalEvery, c.AutoRows, c.Auto, chosen[0].Batch, chosen[0].Epochs, chosen[0].LR, chosen[0].EvalEvery, got.TrainRows)
		}
	}
}

// testLabels loads the table of base as the in-process run would and
// returns its split with the test rows' labels by example ID.
func testLabels(t *testing.T, base config.Config) (*data.Split, map[uint64]uint8) {
	t.Helper()
	full, err := data.Load(base.Data, base.DataOptions())
	if err != nil {
		t.Fatal(err)
	}
	label := make(map[uint64]uint8, len(full.Test.IDs))
	for i, id := range full.Test.IDs {
		label[id] = full.Test.Labels[i]
	}
	return full, label
}
