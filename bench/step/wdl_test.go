package step

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func benchStep(b *testing.B, spec Spec) {
	sb, err := NewWDL(spec)
	if err != nil {
		b.Fatal(err)
	}
	for range 3 { // warm up: grow buffers, fault in pages
		if _, err := sb.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := sb.Step(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(spec.Batch)*float64(b.N)/b.Elapsed().Seconds(), "examples/s")
	b.Logf("engine %s", tensor.Default.Name())
}

// BenchmarkWDLStep is the step of docs/PERFORMANCE.md: batch 1024, 26 tables of
// 100,000 rows, 13 dense, 6×128 cut after 3.
func BenchmarkWDLStep(b *testing.B) { benchStep(b, DefaultSpec()) }

// BenchmarkWDLStepSmallVocab is the same with 1,000-row tables.
func BenchmarkWDLStepSmallVocab(b *testing.B) {
	s := DefaultSpec()
	s.Vocab = 1000
	b.Run("", func(b *testing.B) { benchStep(b, s) })
}

// TestWDLSmall runs a few steps of a small Wide&Deep benchmark. The
// initial logits are near 0 (small initial weights), so the first loss is
// near ln 2, the BCE of predicting ½, whatever the labels.
func TestWDLSmall(t *testing.T) {
	sb, err := NewWDL(Spec{Batch: 16, Vocab: 50, Fields: 3, Dense: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		l, err := sb.Step()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && math.Abs(l-math.Ln2) > 0.05 {
			t.Fatalf("first loss %v, want about ln 2 = %v", l, math.Ln2)
		}
		if math.IsNaN(l) || l <= 0 {
			t.Fatalf("step %d: loss %v", i, l)
		}
	}
	for _, bad := range []Spec{{Batch: 0, Vocab: 10}, {Batch: 4, Vocab: 0}, {Batch: 4, Vocab: 10, Fields: -1}} {
		if _, err := NewWDL(bad); err == nil || !strings.Contains(err.Error(), "batch and vocab must be positive") {
			t.Errorf("NewWDL(%+v): %v, want a refusal", bad, err)
		}
	}
}

// TestWDLStepSameAtAnyCoreCount trains the Wide&Deep split model at a
// batch large enough that every parallel part of the step is cut (the
// products' grids, the element-wise passes, the embedding shards, the
// finiteness checks), built and run at GOMAXPROCS 1, 2, 8 and 16: the
// losses and every weight must be the same bit for bit.
func TestWDLStepSameAtAnyCoreCount(t *testing.T) {
	spec := Spec{Batch: 4096, Vocab: 5000, Fields: 26, Dense: 13, Seed: 3}
	steps := 4
	if testing.Short() {
		spec.Batch, steps = 2048, 2
	}
	var refLoss []float64
	var refW [][]float32
	for _, procs := range []int{1, 2, 8, 16} {
		old := runtime.GOMAXPROCS(procs)
		sb, err := NewWDL(spec)
		if err != nil {
			t.Fatal(err)
		}
		var loss []float64
		for range steps {
			l, err := sb.Step()
			if err != nil {
				t.Fatal(err)
			}
			loss = append(loss, l)
		}
		runtime.GOMAXPROCS(old)
		w := [][]float32{sb.Bottom.Embedding().Store(), sb.Top.WideEmbedding().Store()}
		for _, d := range sb.Bottom.Dense() {
			w = append(w, d.W.Data, d.B.Data)
		}
		if refW == nil {
			refLoss, refW = loss, w
			continue
		}
		for i := range loss {
			if math.Float64bits(loss[i]) != math.Float64bits(refLoss[i]) {
				t.Fatalf("GOMAXPROCS %d: loss of step %d is %v, at 1 core %v", procs, i, loss[i], refLoss[i])
			}
		}
		for k := range w {
			for i := range w[k] {
				if math.Float32bits(w[k][i]) != math.Float32bits(refW[k][i]) {
					t.Fatalf("GOMAXPROCS %d: weights %d differ at %d: %v vs %v", procs, k, i, w[k][i], refW[k][i])
				}
			}
		}
	}
}
