package rundirtest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/rundir"
)

// TestWrite: the recorded run has one batch record per step, a null leak
// AUC at the positive-free 37th batch, a summary whose best test AUC is
// the one asked for (the last evaluation's), and the same bytes twice.
func TestWrite(t *testing.T) {
	read := func(dir string) (sum *rundir.Summary, batches []rundir.BatchRecord, raw []byte) {
		sum = Write(t, dir, Spec{Config: "seed: 3\nattacks: [norm]\n", Steps: 40, Leak: 0.8, AUC: 0.75})
		f, err := os.Open(filepath.Join(dir, rundir.BatchesFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for sc := bufio.NewScanner(f); sc.Scan(); {
			var b rundir.BatchRecord
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
				t.Fatal(err)
			}
			batches = append(batches, b)
			raw = append(raw, sc.Bytes()...)
		}
		return sum, batches, raw
	}
	sum, batches, raw := read(t.TempDir())
	if sum.TestAUCBest != 0.75 || sum.Steps != 40 {
		t.Errorf("summary: best test AUC %v, steps %d; want 0.75, 40", sum.TestAUCBest, sum.Steps)
	}
	if len(batches) != 40 {
		t.Fatalf("%d batch records, want 40", len(batches))
	}
	if v, ok := batches[36].Leak["norm/cut"]; !ok || v != nil || batches[36].Positives != 0 {
		t.Errorf("37th batch: %d positives, norm/cut %v; want none and null", batches[36].Positives, v)
	}
	var mean float64
	var n int
	for _, b := range batches {
		if v := b.Leak["norm/cut"]; v != nil {
			mean += *v
			n++
		}
	}
	if mean /= float64(n); n != 39 || mean < 0.6 {
		t.Errorf("norm/cut over %d batches: mean %v; want 39 batches and a leak (positives shifted by 1.8σ in one of 8 columns)", n, mean)
	}
	if _, _, again := read(t.TempDir()); string(again) != string(raw) {
		t.Error("two recordings of the same spec differ")
	}
}

// TestWriteParties: a run of three passive parties records each party and
// each colluding subset in batches.jsonl (7 views: a, b, c, a+b, a+c,
// b+c, a+b+c) and summary.json, with the gains the fixture sets (0.2/k for
// the k-th party) and the model attacks' and feature attacks' figures of
// the last evaluation.
func TestWriteParties(t *testing.T) {
	dir := t.TempDir()
	sum := Write(t, dir, Spec{Config: "seed: 3\nattacks: [norm]\ncontribution: true\n", Steps: 20, Leak: 0.9, AUC: 0.75,
		Parties: []string{"a", "b", "c"},
		PartyAttacks: func(done int) map[string]map[string]float64 {
			return map[string]map[string]float64{"a+b": {"completion/auc": float64(done)}}
		},
		Features: func(done int) map[string]float64 {
			return map[string]float64{"inverse_linear/r2_mean": float64(done) / 100}
		}})
	if len(sum.Parties) != 7 {
		t.Fatalf("%d parties and subsets in the summary, want 7: %v", len(sum.Parties), sum.Parties)
	}
	for name, gain := range map[string]float64{"a": 0.2, "b": 0.1, "c": 0.2 / 3} {
		if g := sum.Parties[name].GainSelected; g == nil || *g < gain-1e-12 || *g > gain+1e-12 {
			t.Errorf("party %s: gain %v, want %v", name, g, gain)
		}
	}
	if m := sum.Parties["a+b+c"].Members; len(m) != 3 || sum.Parties["a+b"].EvalAttacksFinal["completion/auc"] != 20 {
		t.Errorf("a+b+c members %v, a+b's model attack %v; want 3 and 20", m, sum.Parties["a+b"].EvalAttacksFinal)
	}
	raw, err := os.ReadFile(filepath.Join(dir, rundir.BatchesFile))
	if err != nil {
		t.Fatal(err)
	}
	var first rundir.BatchRecord
	if err := json.Unmarshal(raw[:strings.IndexByte(string(raw), '\n')], &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Parties) != 7 || len(first.Parties["a"]) != 3 || len(first.Parties["a+c"]) != 1 {
		t.Errorf("the first batch's per-party figures: %v; want 7 views, 3 layers of a party, the cut of a subset", first.Parties)
	}
	evals, err := os.ReadFile(filepath.Join(dir, rundir.EvalFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(evals), `"inverse_linear/r2_mean":0.2`) {
		t.Errorf("eval.jsonl lacks the last evaluation's feature figure:\n%s", evals)
	}
}
