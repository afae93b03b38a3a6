package run

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sbinet/npyio"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/rundir"
	"gonum.org/v1/gonum/mat"
)

func smallConfig(t *testing.T) config.Config {
	t.Helper()
	c := config.Default()
	c.SynthRows, c.Batch, c.Epochs, c.LR, c.EvalEvery = 20000, 256, 2, 3e-3, 25
	c.Layers, c.Cut = []int{32, 32, 32, 32}, 2
	c.Attacks = []string{"norm", "cosine", "memory_norm", "spectral"}
	c.Out = t.TempDir()
	return c
}

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

func TestTrainWritesTheRunDirectory(t *testing.T) {
	cfg := smallConfig(t)
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 4000 rows, 10% held out by a hash of the ID: about 3600 training rows
	// in batches of 256 → 15 batches per epoch.
	perEpoch := (sum.TrainRows + cfg.Batch - 1) / cfg.Batch
	if sum.Steps != int64(2*perEpoch) {
		t.Fatalf("steps %d, want %d", sum.Steps, 2*perEpoch)
	}
	batches := readLines(t, filepath.Join(cfg.Out, "batches.jsonl"))
	if len(batches) != int(sum.Steps) {
		t.Fatalf("%d lines in batches.jsonl, want %d", len(batches), sum.Steps)
	}
	for i, b := range batches {
		for _, k := range []string{"step", "epoch", "loss", "positives", "leak", "protect_ms"} {
			if _, ok := b[k]; !ok {
				t.Fatalf("batch line %d has no %q: %v", i, k, b)
			}
		}
		if int(b["step"].(float64)) != i {
			t.Fatalf("line %d has step %v", i, b["step"])
		}
		leak := b["leak"].(map[string]any)
		for _, k := range []string{"norm/cut", "norm/first", "cosine/cut", "cosine/first", "spectral/cut"} {
			if _, ok := leak[k]; !ok {
				t.Fatalf("batch %d: no leak key %s in %v", i, k, leak)
			}
		}
	}
	evals := readLines(t, filepath.Join(cfg.Out, "eval.jsonl"))
	// every 25 steps plus a final one unless the last step is a multiple of 25
	want := int(sum.Steps)/25 + map[bool]int{true: 0, false: 1}[sum.Steps%25 == 0]
	if len(evals) != want {
		t.Fatalf("%d evaluations, want %d", len(evals), want)
	}
	epochs := readLines(t, filepath.Join(cfg.Out, "epochs.jsonl"))
	if len(epochs) != 2 {
		t.Fatalf("%d epoch lines, want 2", len(epochs))
	}
	if _, ok := epochs[1]["leak"].(map[string]any)["memory_norm/cut"]; !ok {
		t.Fatalf("epoch line without memory_norm/cut: %v", epochs[1])
	}
	raw, err := os.ReadFile(filepath.Join(cfg.Out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"test_auc_best", "test_auc_final", "test_loss_final", "examples_per_s", "leak"} {
		if _, ok := s[k]; !ok {
			t.Fatalf("summary.json has no %q", k)
		}
	}
	// Without protection the norm attack at the cut recovers the labels
	// almost perfectly (observation 1 of the ICLR paper); the synthetic
	// data is learnable.
	if l := sum.Leak["norm/cut"]; l.Q95 < 0.9 {
		t.Fatalf("norm/cut q95 leak AUC %.3f with no protection, want ≥ 0.9", l.Q95)
	}
	if sum.Leak["memory_norm/cut"].Batches != 2 {
		t.Fatalf("memory_norm/cut summarised over %d epochs, want 2", sum.Leak["memory_norm/cut"].Batches)
	}
	// Every series carries its chance floor, a number in (0, ½].
	for k, v := range s["leak"].(map[string]any) {
		c, ok := v.(map[string]any)["chance_q95_abs"].(float64)
		if !ok || !(c > 0 && c <= 0.5) {
			t.Fatalf("summary.json leak %s: chance_q95_abs %v", k, v.(map[string]any)["chance_q95_abs"])
		}
	}
	// The epoch-memory AUC is over every training example both epochs:
	// n1 positives, n0 negatives, normal null with sd √((n+1)/(12·n1·n0)),
	// whose two-sided 95% point is 1.959964·sd.
	n1 := math.Round(sum.TrainPosRate * float64(sum.TrainRows))
	n0 := float64(sum.TrainRows) - n1
	if n1 > 10 && n0 > 10 {
		want := 1.959963984540054 * math.Sqrt((n1+n0+1)/(12*n1*n0))
		if got := sum.Leak["memory_norm/cut"].ChanceQ95Abs; math.Abs(got-want) > 1e-8 {
			t.Fatalf("memory_norm/cut chance %v, want %v (n1 %v, n0 %v)", got, want, n1, n0)
		}
	}
	if sum.TestAUCBest < 0.6 {
		t.Fatalf("best test AUC %.3f, want ≥ 0.6", sum.TestAUCBest)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	checkServingFiles(t, cfg)
}

// checkServingFiles checks the files that serve a run's models: the
// encoding lists Criteo's 13 dense and 26 categorical columns, and the
// saved models load into models built as the run built them (a model
// Load checks every section's name and size).
func checkServingFiles(t *testing.T, cfg config.Config) {
	t.Helper()
	enc, err := data.LoadEncoding(filepath.Join(cfg.Out, rundir.EncodingFile))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[data.ColumnKind]int{}
	for _, c := range enc.Columns {
		kinds[c.Kind]++
	}
	if len(enc.Columns) != 39 || kinds[data.KindDense] != 13 || kinds[data.KindCategorical] != 26 || enc.LabelCol != "label" {
		t.Fatalf("encoding: %d columns (%v), label %q; want 13 dense and 26 categorical, label \"label\"", len(enc.Columns), kinds, enc.LabelCol)
	}
	split, err := cfg.LoadData()
	if err != nil {
		t.Fatal(err)
	}
	rc := cfg
	rc.Resolve()
	bottom, top, _, err := rc.BuildModels(split.Train.X)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		file string
		load func(io.Reader) error
	}{{rundir.BottomModelFile, bottom.Load}, {rundir.TopModelFile, top.Load}} {
		f, err := os.Open(filepath.Join(cfg.Out, m.file))
		if err != nil {
			t.Fatal(err)
		}
		err = m.load(bufio.NewReader(f))
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
	}
}

// TestTrainIsDeterministicForASeed trains the same configuration three
// times, at GOMAXPROCS 1, 2 and 8: every batch's loss and leak figures must
// be the same.
func TestTrainIsDeterministicForASeed(t *testing.T) {
	var got [3][]map[string]any
	for i, procs := range []int{1, 2, 8} {
		cfg := smallConfig(t)
		cfg.Epochs, cfg.Protect, cfg.Params = 1, "marvell", protect.Params{"marvell_s": 1}
		old := runtime.GOMAXPROCS(procs)
		_, err := Train(context.Background(), cfg, Options{})
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = readLines(t, filepath.Join(cfg.Out, "batches.jsonl"))
	}
	for r, procs := range []int{2, 8} {
		if len(got[r+1]) != len(got[0]) {
			t.Fatalf("GOMAXPROCS %d: %d batches, at 1 core %d", procs, len(got[r+1]), len(got[0]))
		}
		for i := range got[0] {
			a, b := got[0][i], got[r+1][i]
			if a["loss"] != b["loss"] {
				t.Fatalf("GOMAXPROCS %d, batch %d: loss %v, at 1 core %v", procs, i, b["loss"], a["loss"])
			}
			la, _ := json.Marshal(a["leak"])
			lb, _ := json.Marshal(b["leak"])
			if string(la) != string(lb) {
				t.Fatalf("GOMAXPROCS %d, batch %d: leak %s, at 1 core %s", procs, i, lb, la)
			}
		}
	}
}

// TestQueuedRecordingMatchesInline: recording the steps on the queue's
// goroutine writes the same batches, evaluations and summary figures as
// recording them inline, with a protection, the cosine oracle, the epoch
// memory and the dump.
func TestQueuedRecordingMatchesInline(t *testing.T) {
	var runs [2]config.Config
	var sums [2]*rundir.Summary
	for i, inline := range []bool{true, false} {
		cfg := smallConfig(t)
		cfg.Epochs, cfg.Protect, cfg.Params = 1, "iso", protect.Params{"iso_t": 1}
		cfg.Dump, cfg.DumpBatches = t.TempDir(), 3
		sum, err := Train(context.Background(), cfg, Options{recordInline: inline})
		if err != nil {
			t.Fatal(err)
		}
		runs[i], sums[i] = cfg, sum
	}
	for _, f := range []string{"batches.jsonl", "eval.jsonl"} {
		a := readLines(t, filepath.Join(runs[0].Out, f))
		b := readLines(t, filepath.Join(runs[1].Out, f))
		if len(a) != len(b) || len(a) == 0 {
			t.Fatalf("%s: %d vs %d records", f, len(a), len(b))
		}
		for k := range a {
			delete(a[k], "protect_ms")
			delete(b[k], "protect_ms")
			ja, _ := json.Marshal(a[k])
			jb, _ := json.Marshal(b[k])
			if string(ja) != string(jb) {
				t.Fatalf("%s record %d:\ninline %s\nqueued %s", f, k, ja, jb)
			}
		}
	}
	la, _ := json.Marshal(sums[0].Leak)
	lb, _ := json.Marshal(sums[1].Leak)
	if string(la) != string(lb) {
		t.Errorf("summary leak: inline %s, queued %s", la, lb)
	}
	for _, name := range []string{"index.jsonl", "step000002_cut_grad.npy"} {
		a, errA := os.ReadFile(filepath.Join(runs[0].Dump, name))
		b, errB := os.ReadFile(filepath.Join(runs[1].Dump, name))
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("dump %s differs (%v, %v)", name, errA, errB)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"no data", func(c *config.Config) { c.SynthRows = 0 }, "no data"},
		{"batch", func(c *config.Config) { c.Batch = 1 }, "batch"},
		{"cut", func(c *config.Config) { c.Cut = 9 }, "cut"},
		{"protection", func(c *config.Config) { c.Protect = "nope" }, "nope"},
		{"attack", func(c *config.Config) { c.Attacks = []string{"nope"} }, "nope"},
		{"model", func(c *config.Config) { c.Model = "nope" }, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.SynthRows = 600
			tc.edit(&cfg)
			_, err := Train(context.Background(), cfg, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestConfigFileKeysMirrorFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("batch: 512\nprotect: marvell\nmarvell_s: 4\nattacks: [norm, cosine]\n"), 0o644)
	c, err := config.LoadFile(path, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if c.Batch != 512 || c.Protect != "marvell" || c.Params["marvell_s"] != 4 || len(c.Attacks) != 2 || c.Epochs != 0 {
		t.Fatalf("got %+v", c)
	}
	os.WriteFile(path, []byte("batchsize: 512\n"), 0o644)
	if _, err := config.LoadFile(path, config.Default()); err == nil {
		t.Fatal("an unknown key was accepted")
	}
}

func TestSharedSamplesTrain(t *testing.T) {
	for _, tc := range []struct {
		path, format string
		testFrac     float64
		batch        int
	}{
		{"../../shared/data/criteo_sample.txt", "criteo", 0.1, 32},
		{"../../shared/data/avazu_sample.txt", "avazu", 0.2, 16},
	} {
		if _, err := os.Stat(tc.path); err != nil {
			t.Skipf("%s not here: %v", tc.path, err)
		}
		cfg := config.Default()
		cfg.Data, cfg.Format, cfg.TestFrac, cfg.Batch, cfg.Epochs = tc.path, tc.format, tc.testFrac, tc.batch, 2
		cfg.Attacks = []string{"norm", "cosine", "spectral"}
		cfg.Out = t.TempDir()
		if _, err := Train(context.Background(), cfg, Options{}); err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
	}
}

func TestOneClassTestSplitIsRefusedUpFront(t *testing.T) {
	path := "../../shared/data/avazu_sample.txt"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s not here: %v", path, err)
	}
	cfg := config.Default()
	cfg.Data, cfg.Format, cfg.Batch, cfg.Out = path, "avazu", 16, t.TempDir()
	// With the default 10% the 100-row sample leaves 5 test rows, all
	// negative under seed 1.
	_, err := Train(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "test split") {
		t.Fatalf("error %v, want one about the test split", err)
	}
	if _, serr := os.Stat(filepath.Join(cfg.Out, "batches.jsonl")); serr == nil {
		t.Fatal("training started before the check")
	}
}

func TestDumpWritesNumPyFilesForOfflineAttacks(t *testing.T) {
	cfg := smallConfig(t)
	cfg.Epochs, cfg.Dump, cfg.DumpBatches = 1, filepath.Join(t.TempDir(), "dump"), 3
	sum, err := Train(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	index := readLines(t, filepath.Join(cfg.Dump, "index.jsonl"))
	if len(index) != 3 {
		t.Fatalf("%d dumped batches, want 3", len(index))
	}
	batches := readLines(t, filepath.Join(cfg.Out, "batches.jsonl"))
	for i, e := range index {
		var labels []uint8
		readNPY(t, filepath.Join(cfg.Dump, e["labels"].(string)), &labels)
		var ids []uint64
		readNPY(t, filepath.Join(cfg.Dump, e["ids"].(string)), &ids)
		pos := 0
		for _, y := range labels {
			pos += int(y)
		}
		if len(labels) != cfg.Batch || len(ids) != cfg.Batch || pos != int(batches[i]["positives"].(float64)) {
			t.Fatalf("batch %d: %d labels (%d positive), %d ids; batches.jsonl says %v positives", i, len(labels), pos, len(ids), batches[i]["positives"])
		}
		for _, k := range []string{"cut_grad", "first_grad", "cut_embedding"} {
			var m mat.Dense
			readNPY(t, filepath.Join(cfg.Dump, e[k].(string)), &m)
			if r, c := m.Dims(); r != cfg.Batch || c != cfg.Layers[k2layer(k, cfg.Cut)] {
				t.Fatalf("batch %d: %s is %d×%d", i, k, r, c)
			}
		}
	}
	if sum.Steps == 0 {
		t.Fatal("no training steps")
	}
}

// k2layer gives the index into Layers of the layer a dump file describes.
func k2layer(k string, cut int) int {
	if k == "first_grad" {
		return 0
	}
	return cut - 1
}

func readNPY(t *testing.T, path string, dst any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := npyio.Read(f, dst); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestValidateChecksProtectionAndAttacksBeforeReadingData(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"unknown protection", func(c *config.Config) { c.Protect = "nope" }, "nope"},
		{"iso without a ratio", func(c *config.Config) { c.Protect = "iso" }, "iso"},
		{"unknown attack", func(c *config.Config) { c.Attacks = []string{"norm", "telepathy"} }, "telepathy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Data, cfg.Out = filepath.Join(t.TempDir(), "does-not-exist.txt"), t.TempDir()
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	cfg := config.Default()
	cfg.Data, cfg.Out, cfg.Attacks = "x.txt", t.TempDir(), []string{"all"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a valid config was refused: %v", err)
	}
}
