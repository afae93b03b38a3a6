package netrun

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// criteoNames returns prefix1..prefixN for i in [from, to].
func criteoNames(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// modelSections reads the header of a model file (model/checkpoint.go's
// format, parsed here independently) and returns its kind and the name
// and float count of every section.
func modelSections(t *testing.T, raw []byte) (kind string, names []string, sizes []uint64) {
	t.Helper()
	le := binary.LittleEndian
	if !bytes.HasPrefix(raw, []byte("SGMODEL\x00")) {
		t.Fatal("not a model file")
	}
	b := raw[8+4:] // magic, version
	str := func() string {
		n := le.Uint32(b)
		s := string(b[4 : 4+n])
		b = b[4+n:]
		return s
	}
	kind = str()
	n := le.Uint32(b)
	b = b[4:]
	for range n {
		names = append(names, str())
		sizes = append(sizes, le.Uint64(b))
		b = b[8:]
	}
	return kind, names, sizes
}

// TestColumnsSplit trains over loopback with the features split between
// the parties by --columns: the passive party loads I1..I13 and C1..C3 of
// a Criteo file, the active party the label and C4..C26 (its Wide&Deep
// wide part). It checks that the run trains, that each party's
// encoding lists exactly its columns, and that each saved model's
// input width is that of its columns: the bottom's first dense layer reads
// 13 dense values and 3 embeddings, the top's wide part 23 columns. A model
// built for the whole file does not load either file.
func TestColumnsSplit(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "unused"))
	base.Attacks = []string{"norm"}
	act, pas := partyConfigs(base, root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	pas.Columns = append(criteoNames("I", 1, 13), criteoNames("C", 1, 3)...)
	act.Columns = criteoNames("C", 4, 26)
	sum := pair(t, act, pas)

	wantSteps := int64(base.Epochs) * int64((sum.TrainRows+base.Batch-1)/base.Batch)
	if sum.Steps != wantSteps || math.IsNaN(sum.TestAUCFinal) || !(sum.TestAUCFinal > 0 && sum.TestAUCFinal < 1) || math.IsNaN(sum.TrainLossFinal) {
		t.Fatalf("the run did not train: %d steps (want %d), test AUC %v, train loss %v", sum.Steps, wantSteps, sum.TestAUCFinal, sum.TrainLossFinal)
	}

	for _, p := range []struct {
		dir  string
		cols []string
	}{{pas.Out, pas.Columns}, {act.Out, act.Columns}} {
		e, err := data.LoadEncoding(filepath.Join(p.dir, rundir.EncodingFile))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range e.Columns {
			names = append(names, c.Name)
			want := data.KindCategorical
			if strings.HasPrefix(c.Name, "I") {
				want = data.KindDense
			}
			if c.Kind != want || (want == data.KindCategorical && c.Cardinality() != base.HashBuckets) {
				t.Errorf("%s: column %s (%s, cardinality %d), want a %s column (cardinality %d if categorical)", p.dir, c.Name, c.Kind, c.Cardinality(), want, base.HashBuckets)
			}
		}
		if !slices.Equal(names, p.cols) {
			t.Errorf("%s/%s lists columns %v, want %v", p.dir, rundir.EncodingFile, names, p.cols)
		}
	}

	// The bottom: its first section is the first dense layer's weight,
	// (13 dense + 3 columns × embedding width) × first layer width.
	bottomRaw := mustRead(t, filepath.Join(pas.Out, "bottom.model"))
	kind, names, sizes := modelSections(t, bottomRaw)
	if in := 13 + 3*base.EmbedDim; kind != "bottom" || sizes[0] != uint64(in*base.Layers[0]) {
		t.Errorf("bottom.model: kind %q, first section %s of %d floats, want %d×%d", kind, names[0], sizes[0], in, base.Layers[0])
	}
	hashed := func(n int) []int {
		c := make([]int, n)
		for i := range c {
			c[i] = base.HashBuckets
		}
		return c
	}
	mc := act.ModelConfig()
	for _, tc := range []struct {
		schema model.Schema
		ok     bool
	}{{model.Schema{Cardinality: hashed(3), NumDense: 13}, true}, {model.Schema{Cardinality: hashed(26), NumDense: 13}, false}} {
		b, err := model.NewBottom(mc, tc.schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Load(bytes.NewReader(bottomRaw)); (err == nil) != tc.ok {
			t.Errorf("bottom.model into a bottom over %d categorical columns: %v", len(tc.schema.Cardinality), err)
		}
	}
	topRaw := mustRead(t, filepath.Join(act.Out, "top.model"))
	for _, tc := range []struct {
		schema model.Schema
		ok     bool
	}{{model.Schema{Cardinality: hashed(23)}, true}, {model.Schema{Cardinality: hashed(26), NumDense: 13}, false}} {
		top, err := model.NewTop(mc, &tc.schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := top.Load(bytes.NewReader(topRaw)); (err == nil) != tc.ok {
			t.Errorf("top.model into a top whose wide part has %d categorical columns: %v", len(tc.schema.Cardinality), err)
		}
	}
	t.Logf("%d steps, test AUC %.4f; bottom input %d×%d", sum.Steps, sum.TestAUCFinal, 13+3*base.EmbedDim, base.Layers[0])
}

// TestColumnsMissing: a column asked for with --columns that the party's
// file does not hold ends the run before training, with an error naming
// the party, the file and the column; so does a feature list that
// names the label column.
func TestColumnsMissing(t *testing.T) {
	path := synthFile(t, 50)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "unused"))
	act, pas := partyConfigs(base, root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	pas.Addr = "127.0.0.1:1" // closed: the passive's refusal reaches no one
	ctx := context.Background()

	pas.Columns = []string{"I1", "C99"}
	_, err := RunPassive(ctx, pas, Options{Logger: testLogger(t)})
	want := []string{"passive", path, `requested column "C99" not found`}
	if err == nil || !containsAll(err.Error(), want) {
		t.Errorf("passive with a missing column: %v, want an error naming %q", err, want)
	}
	act.Columns = []string{"C4", "X1"}
	_, err = RunActive(ctx, act, Options{Logger: testLogger(t)})
	want = []string{"active", path, `requested column "X1" not found`}
	if err == nil || !containsAll(err.Error(), want) {
		t.Errorf("active with a missing column: %v, want an error naming %q", err, want)
	}
	act.Columns = []string{"label", "C4"}
	_, err = RunActive(ctx, act, Options{Logger: testLogger(t)})
	want = []string{"active", `"label" is the label column`}
	if err == nil || !containsAll(err.Error(), want) {
		t.Errorf("active asking for the label as a feature: %v, want an error naming %q", err, want)
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestVerticalSplitMatchesInProcess: one configuration stating a vertical
// split (key passive_columns; the active party keeps the rest) gives the
// same records in process and as two parties over loopback, each party
// loading its own columns: every evaluation, every batch's loss and
// cut-layer leak AUCs, and the baseline on the active's own columns.
func TestVerticalSplitMatchesInProcess(t *testing.T) {
	path := synthFile(t, 900)
	root := t.TempDir()
	base := smallConfig(path, filepath.Join(root, "inproc"))
	base.Attacks = []string{"norm"}
	base.PassiveColumns = append(criteoNames("I", 1, 13), criteoNames("C", 1, 3)...)
	want, err := run.Train(context.Background(), base, run.Options{})
	if err != nil {
		t.Fatal(err)
	}
	act, pas := partyConfigs(base, root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	got := pair(t, act, pas)
	if g, w := readLines[rundir.EvalRecord](t, filepath.Join(act.Out, "eval.jsonl")), readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl")); !reflect.DeepEqual(g, w) || len(w) < 2 {
		t.Fatalf("evaluations differ:\n got %v\nwant %v", g, w)
	}
	sameBatches(t, act.Out, base.Out, 1)
	if got.TestAUCFinal != want.TestAUCFinal || got.Steps != want.Steps {
		t.Fatalf("summaries differ:\n got %+v\nwant %+v", got, want)
	}
	if got.Baseline == nil || want.Baseline == nil || got.Baseline.Columns != want.Baseline.Columns ||
		*got.Baseline.TestAUC != *want.Baseline.TestAUC || got.Baseline.Features != want.Baseline.Features {
		t.Fatalf("baselines differ:\n got %+v\nwant %+v", got.Baseline, want.Baseline)
	}
	enc, err := data.LoadEncoding(filepath.Join(act.Out, rundir.EncodingFile))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range enc.Columns {
		names = append(names, c.Name)
	}
	if wantAct := criteoNames("C", 4, 26); !slices.Equal(names, wantAct) {
		t.Errorf("the active party loaded %v, want %v", names, wantAct)
	}
}

// TestPassiveFeatureAuditMatchesInProcess: the passive party's red team
// audits its own features at every evaluation (redteam_features.jsonl),
// without any label or active column; its figures are the in-process
// run's of the embedding alone: its "r2"/"acc" figures where the active
// party holds no column (an MLP top, the passive every column), its
// "r2_emb"/"acc_emb" ones where the active holds some (Wide&Deep over
// C14..C26).
func TestPassiveFeatureAuditMatchesInProcess(t *testing.T) {
	path := synthFile(t, 900)
	for _, tc := range []struct {
		name, model string
		passive     []string
		inProcess   func(key string) string // the in-process key of a passive audit's key
	}{
		{"active without columns", "mlp", append(criteoNames("I", 1, 13), criteoNames("C", 1, 26)...), func(k string) string { return k }},
		{"active with columns", "wdl", append(criteoNames("I", 1, 13), criteoNames("C", 1, 13)...), func(k string) string {
			for _, m := range []string{"/r2", "/acc"} {
				if i := strings.Index(k, m); i >= 0 && !strings.HasPrefix(k[i+len(m):], "_own") && !strings.HasPrefix(k[i+len(m):], "_prior") {
					return k[:i] + m + "_emb" + k[i+len(m):]
				}
			}
			return k
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			base := smallConfig(path, filepath.Join(root, "inproc"))
			base.Model, base.Attacks, base.Protect, base.Params = tc.model, []string{"norm"}, "none", nil
			base.PassiveColumns = tc.passive
			base.FeatureAttacks, base.FeatureAux = []string{"inverse_linear"}, 200
			if _, err := run.Train(context.Background(), base, run.Options{}); err != nil {
				t.Fatal(err)
			}
			act, pas := partyConfigs(base, root, "")
			act.InsecureLoopback, pas.InsecureLoopback = true, true
			act.FeatureAttacks, pas.RedTeam = nil, true
			pair(t, act, pas)
			want := readLines[rundir.EvalRecord](t, filepath.Join(base.Out, "eval.jsonl"))
			got := readLines[RedTeamFeatureRecord](t, filepath.Join(pas.Out, RedTeamFeaturesFile))
			if len(got) != len(want) || len(want) < 2 {
				t.Fatalf("%d audits over the network, %d evaluations in process", len(got), len(want))
			}
			for i := range want {
				if got[i].Step != want[i].Step || len(got[i].Features) == 0 {
					t.Fatalf("evaluation %d: step %d with %d figures, in process step %d", i, got[i].Step, len(got[i].Features), want[i].Step)
				}
				for k, g := range got[i].Features {
					if strings.Contains(k, "_own") || strings.Contains(k, "_prior") {
						continue // the passive's "own" is the prior
					}
					v, ok := want[i].Features[tc.inProcess(k)]
					if !ok || math.Abs(g-v) > 1e-9 {
						t.Errorf("step %d: %s = %g over the network, in process %s = %g (%t)", want[i].Step, k, g, tc.inProcess(k), v, ok)
					}
				}
			}
		})
	}
	// The active party refuses the key; the passive without its red team too.
	root := t.TempDir()
	act, pas := partyConfigs(smallConfig(path, filepath.Join(root, "x")), root, "")
	act.InsecureLoopback, pas.InsecureLoopback = true, true
	act.FeatureAttacks, pas.FeatureAttacks = []string{"inverse_linear"}, []string{"inverse_linear"}
	if err := act.validate("active"); err == nil || !strings.Contains(err.Error(), "red team") {
		t.Errorf("active with feature attacks: %v", err)
	}
	if err := pas.validate("passive"); err == nil || !strings.Contains(err.Error(), "red team") {
		t.Errorf("passive with feature attacks and no red team: %v", err)
	}
}
