package data

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	benchOnce sync.Once
	benchPath string
	benchErr  error
)

// benchFile writes a 50,000-row synthetic Criteo file (about 12 MB) once.
func benchFile(b *testing.B) (string, int64) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "splitguard-bench")
		if err != nil {
			benchErr = err
			return
		}
		benchPath = filepath.Join(dir, "synth.txt")
		f, err := os.Create(benchPath)
		if err != nil {
			benchErr = err
			return
		}
		benchErr = WriteSynth(f, 50000, 0.25, 1)
		f.Close()
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	st, err := os.Stat(benchPath)
	if err != nil {
		b.Fatal(err)
	}
	return benchPath, st.Size()
}

func benchmarkLoad(b *testing.B, o Options) {
	p, size := benchFile(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p, o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadVocab loads every row with vocabularies (MB/s of input).
func BenchmarkLoadVocab(b *testing.B) { benchmarkLoad(b, Options{}) }

// BenchmarkLoadHash loads every row with 2^20 hash buckets.
func BenchmarkLoadHash(b *testing.B) { benchmarkLoad(b, Options{HashBuckets: 1 << 20}) }

// BenchmarkLoadSample10 keeps a 10% sample (the authors' setting).
func BenchmarkLoadSample10(b *testing.B) { benchmarkLoad(b, Options{Sample: 0.1}) }

// BenchmarkSynth writes synthetic rows (MB/s of output).
func BenchmarkSynth(b *testing.B) {
	b.ReportAllocs()
	var n countWriter
	for b.Loop() {
		if err := WriteSynth(&n, 20000, 0.25, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n.n / int64(b.N))
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// BenchmarkGenerate loads 200,000 synthetic rows (a default
// `train --synth-rows 200000`'s start) from their text, as before the
// direct source, and straight into the loader's chunks.
func BenchmarkGenerate(b *testing.B) {
	for _, text := range []bool{true, false} {
		name := "direct"
		if text {
			name = "text"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Generate(200000, 0.25, 1, Options{synthText: text}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
