package step

import (
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
