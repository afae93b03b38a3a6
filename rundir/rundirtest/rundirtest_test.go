package rundirtest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
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
