package step

import (
	"math"
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

// BenchmarkWDLStep is the ENGINE-NOTES step: batch 1024, 26 tables of
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
