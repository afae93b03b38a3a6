package netrun

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// newDataFile writes rows with IDs [lo, hi) of a table like csvFile's but
// with its columns in another order, an extra column, and values never
// seen in csvFile's rows (a8, a9; c50..c59; d3) in about a fifth of them.
// Without c3 when dropC3 is set.
func newDataFile(t *testing.T, lo, hi uint64, dropC3 bool) string {
	t.Helper()
	var b strings.Builder
	cols := "c4,id,label,c2,c1,c3,extra\n"
	if dropC3 {
		cols = "c4,id,label,c2,c1,extra\n"
	}
	b.WriteString(cols)
	for id := lo; id < hi; id++ {
		r := rand.New(rand.NewPCG(id, 78))
		c1, c2, c3, c4 := r.IntN(10), r.IntN(8), r.IntN(60), r.IntN(4)
		if dropC3 {
			fmt.Fprintf(&b, "d%d,%d,%d,b%d,a%d,x%d\n", c4, id, r.IntN(2), c2, c1, id)
		} else {
			fmt.Fprintf(&b, "d%d,%d,%d,b%d,a%d,c%d,x%d\n", c4, id, r.IntN(2), c2, c1, c3, id)
		}
	}
	path := filepath.Join(t.TempDir(), "new.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readTable reads a CSV file with a header into rows of column → value.
func readTable(t *testing.T, path string) []map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	head := strings.Split(lines[0], ",")
	var rows []map[string]string
	for _, l := range lines[1:] {
		m := map[string]string{}
		for i, v := range strings.Split(l, ",") {
			m[head[i]] = v
		}
		rows = append(rows, m)
	}
	return rows
}

// TestServeNewFileWithTheTrainingEncoding trains in process (vocabulary
// mode) on file A, then serves and scores file B, whose columns are in
// another order and whose rows include values not in A's vocabulary,
// through `active serve` / `passive score` on loopback, both reading the
// in-process run's directory. The scores equal the saved models' run here
// directly on B encoded by hand with A's vocabulary (ids in byte order of
// the values of A's training split, data.Assign deciding the split; unseen
// values → 0). A B without a column of the encoding and a model config
// other than the run's are refused.
func TestServeNewFileWithTheTrainingEncoding(t *testing.T) {
	root := t.TempDir()
	fileA := csvFile(t, 0, 1000)
	tc := csvConfig(fileA, filepath.Join(root, "train"))
	// Train on a sample of A: the vocabulary comes from the sampled
	// training rows, but scoring must still cover every row of B.
	tc.HashBuckets, tc.Sample = 0, 0.5
	if _, err := run.Train(context.Background(), tc, run.Options{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfigFile(filepath.Join(tc.Out, "config.yaml"), Default())
	if err != nil {
		t.Fatal(err)
	}
	cfg.InsecureLoopback, cfg.Out = true, tc.Out
	fileB := newDataFile(t, 5000, 5300, false)
	cfg.Data = fileB

	// A's vocabulary, by hand.
	names := []string{"c1", "c2", "c3", "c4"}
	vocab := make([]map[string]int32, len(names))
	for j := range vocab {
		vocab[j] = map[string]int32{}
	}
	for _, row := range readTable(t, fileA) {
		id, _ := strconv.ParseUint(row["id"], 10, 64)
		if kept, test := data.Assign(cfg.Seed, id, tc.Sample, cfg.TestFrac); !kept || test {
			continue
		}
		for j, n := range names {
			vocab[j][row[n]] = 0
		}
	}
	// Ids 1, 2, … in byte order of the values (data.Load's rule).
	for j := range vocab {
		for i, v := range slices.Sorted(maps.Keys(vocab[j])) {
			vocab[j][v] = int32(i + 1)
		}
	}
	// B encoded with it.
	rowsB := readTable(t, fileB)
	x := &data.Features{Rows: len(rowsB), NumCat: len(names), CatNames: names, Dense: []float32{}}
	for j := range names {
		x.Cardinality = append(x.Cardinality, len(vocab[j])+1)
	}
	idsB := make([]uint64, len(rowsB))
	unseen := 0
	for i, row := range rowsB {
		idsB[i], _ = strconv.ParseUint(row["id"], 10, 64)
		for j, n := range names {
			v := vocab[j][row[n]] // 0 when unseen
			if v == 0 {
				unseen++
			}
			x.Cat = append(x.Cat, v)
		}
	}
	if unseen < 30 {
		t.Fatalf("only %d values of B are unseen in A; the test needs more", unseen)
	}
	// The saved models, run directly.
	schema := model.SchemaOf(x)
	bottom, top, err := model.NewWideDeep(cfg.ModelConfig(), schema, schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		file string
		load func(f *os.File) error
	}{{rundir.BottomModelFile, func(f *os.File) error { return bottom.Load(f) }}, {rundir.TopModelFile, func(f *os.File) error { return top.Load(f) }}} {
		f, err := os.Open(filepath.Join(tc.Out, m.file))
		if err != nil {
			t.Fatal(err)
		}
		err = m.load(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
	}
	all := make([]int, len(rowsB))
	for i := range all {
		all[i] = i
	}
	var batch data.Batch
	x.Gather(all, &batch)
	e, err := bottom.Forward(&batch)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := top.Forward(e, &batch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]float64{}
	for i, l := range logits {
		want[idsB[i]] = 1 / (1 + math.Exp(-float64(l)))
	}

	// Served and scored through the network path.
	out := filepath.Join(root, "scores.csv")
	sr, pr := serveScore(t, cfg, cfg, ServeOptions{Out: out, Sessions: 1}, ScoreOptions{Split: "all"})
	if pr.Scored != len(rowsB) || pr.Unscored != 0 || sr.Scored != int64(len(rowsB)) {
		t.Fatalf("scored %d (serve %d) of %d rows, %d unscored", pr.Scored, sr.Scored, len(rowsB), pr.Unscored)
	}
	ids, ps := readScores(t, out)
	if len(ids) != len(rowsB) {
		t.Fatalf("%d scores for %d rows", len(ids), len(rowsB))
	}
	for i, id := range ids {
		w, ok := want[id]
		if !ok {
			t.Fatalf("score for ID %d, not a row of B", id)
		}
		// The served score is float32; the batches differ in size (one
		// here, EvalBatch rows there), which may change float rounding.
		if math.Abs(ps[i]-w) > 1e-6 {
			t.Fatalf("ID %d: served score %.9g, the models give %.9g on B encoded with A's vocabulary", id, ps[i], w)
		}
	}

	// Refused: a file without a column of the encoding; another model.
	bad := cfg
	bad.Addr = "127.0.0.1:1" // never dialled: both are refused before
	bad.Data = newDataFile(t, 5000, 5100, true)
	if _, err := Score(context.Background(), bad, ScoreOptions{Split: "all"}, Options{Logger: testLogger(t)}); err == nil ||
		!strings.Contains(err.Error(), `column "c3"`) || !strings.Contains(err.Error(), bad.Data) {
		t.Errorf("scoring a file without c3: %v", err)
	}
	bad.Data = cfg.Data
	bad.Layers = []int{16, 16, 8}
	if _, err := Score(context.Background(), bad, ScoreOptions{Split: "all"}, Options{Logger: testLogger(t)}); err == nil ||
		!strings.Contains(err.Error(), rundir.BottomModelFile) {
		t.Errorf("scoring with another model config: %v", err)
	}
}
