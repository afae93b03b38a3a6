package nn

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/tensor"
)

// BenchmarkEmbeddingStep times the embedding part of the Wide&Deep step:
// Lookup, Backward and LazyAdam on 26 tables of 100,000 rows (dim 4),
// batch 1024, ids uniform (the cache-hostile case).
func BenchmarkEmbeddingStep(b *testing.B) { benchEmbeddingStep(b, 1024, false) }

// BenchmarkEmbeddingStep8192 is BenchmarkEmbeddingStep at batch 8,192
// with the gradient rewritten before every Backward by row ranges spread
// over the cores, as the product before it in a step writes it: the
// case where Backward reads rows another core wrote.
func BenchmarkEmbeddingStep8192(b *testing.B) { benchEmbeddingStep(b, 8192, true) }

func benchEmbeddingStep(b *testing.B, B int, rewrite bool) {
	const F, V, D = 26, 100000, 4
	r := rand.New(rand.NewPCG(1, 2))
	e := benchTables(b, F, V, D, r)
	e.L2 = 0.01
	opt := NewLazyAdam(1e-4)
	var batches [][]int32
	for range 8 {
		ids := make([]int32, B*F)
		for i := range ids {
			ids[i] = int32(r.IntN(V))
		}
		batches = append(batches, ids)
	}
	x := tensor.New(B, F*D+13)
	dy := tensor.New(B, F*D+13)
	for i := range dy.Data {
		dy.Data[i] = float32(r.Float64() - 0.5)
	}
	k := 0
	step := func() {
		if err := e.Lookup(batches[k%len(batches)], B, x, 0); err != nil {
			b.Fatal(err)
		}
		if rewrite {
			parts := runtime.GOMAXPROCS(0)
			par.Do(parts, func(p int) {
				d := dy.Data[dy.Cols*(B*p/parts) : dy.Cols*(B*(p+1)/parts)]
				for i := range d {
					d[i] = -d[i]
				}
			})
		}
		e.Backward(dy, 0)
		opt.Step(e)
		k++
	}
	for range 3 { // grow buffers, fault in pages
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// BenchmarkEmbeddingEvalLookup times an evaluation's Lookup: 8,192 rows
// of 26 tables of 100,000 rows (dim 4), ids uniform, no Backward after
// it.
func BenchmarkEmbeddingEvalLookup(b *testing.B) {
	const B, F, V, D = 8192, 26, 100000, 4
	r := rand.New(rand.NewPCG(3, 4))
	e := benchTables(b, F, V, D, r)
	ids := make([]int32, B*F)
	for i := range ids {
		ids[i] = int32(r.IntN(V))
	}
	x := tensor.New(B, F*D+13)
	for b.Loop() {
		if err := e.Lookup(ids, B, x, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTables returns f tables of v rows, d wide, drawn from r.
func benchTables(b *testing.B, f, v, d int, r *rand.Rand) *Embedding {
	b.Helper()
	cards := make([]int, f)
	for i := range cards {
		cards[i] = v
	}
	e, err := NewEmbedding(cards, d, 0.05, r)
	if err != nil {
		b.Fatal(err)
	}
	return e
}
