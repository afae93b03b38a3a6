// Package data reads and prepares the examples that the two parties hold:
// Criteo, Avazu and generic CSV tables, synthetic Criteo-shaped data, and
// image sets through the registry of image formats (their readers live in
// data/images, which registers itself when imported). It keeps features
// and labels apart: a party without labels only ever handles a [Features]
// value.
package data

import (
	"fmt"
	"runtime"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/tensor"
)

// ImageShape describes how a row of dense features is laid out when the
// features are an image: Height×Width×Channels values, channel fastest.
type ImageShape struct{ Height, Width, Channels int }

// Features is an encoded feature table: categorical columns as
// vocabulary ids and dense columns scaled to [0, 1]. It holds no labels.
type Features struct {
	Rows int

	// Categorical columns, row-major Rows×NumCat. Column j's ids lie in
	// [0, Cardinality[j]).
	NumCat      int
	Cat         []int32
	Cardinality []int
	CatNames    []string

	// Dense columns, row-major Rows×NumDense.
	NumDense   int
	Dense      []float32
	DenseNames []string

	// Image is set when Dense holds images.
	Image *ImageShape
}

// Batch is the rows of a Features table that make up one batch, gathered
// contiguously: the input of a bottom (or wide) model.
type Batch struct {
	Rows  int
	Cat   []int32        // Rows×NumCat
	Dense *tensor.Matrix // Rows×NumDense
}

// Gather copies the given rows of f into dst, reusing dst's storage.
func (f *Features) Gather(rows []int, dst *Batch) {
	dst.Rows = len(rows)
	if cap(dst.Cat) < len(rows)*f.NumCat {
		dst.Cat = make([]int32, len(rows)*f.NumCat)
	}
	dst.Cat = dst.Cat[:len(rows)*f.NumCat]
	dst.Dense = dst.Dense.Resize(len(rows), f.NumDense)
	parts := gatherParts(len(rows))
	if parts < 2 {
		f.gatherRange(rows, dst, 0, len(rows))
		return
	}
	// A training batch's rows are scattered over the table, so each is a
	// cache miss or two: on several cores the misses of the parts
	// overlap (the step waits for its batch).
	par.Do(parts, func(p int) {
		f.gatherRange(rows, dst, len(rows)*p/parts, len(rows)*(p+1)/parts)
	})
}

// gatherRange copies rows[i0:i1] of f into the same rows of dst (Gather).
func (f *Features) gatherRange(rows []int, dst *Batch, i0, i1 int) {
	for i := i0; i < i1; i++ {
		r := rows[i]
		copy(dst.Cat[i*f.NumCat:(i+1)*f.NumCat], f.Cat[r*f.NumCat:(r+1)*f.NumCat])
		copy(dst.Dense.Row(i), f.Dense[r*f.NumDense:(r+1)*f.NumDense])
	}
}

// gatherGrain is the fewest rows a part of Gather copies.
const gatherGrain = 256

// gatherParts is how many row ranges Gather cuts n rows into: up to one
// per core, of at least gatherGrain rows.
func gatherParts(n int) int { return min(runtime.GOMAXPROCS(0), n/gatherGrain) }

// Validate checks f's internal consistency: slice lengths and id ranges.
func (f *Features) Validate() error {
	if len(f.Cat) != f.Rows*f.NumCat || len(f.Cardinality) != f.NumCat {
		return fmt.Errorf("data: categorical block has %d ids and %d cardinalities for %d rows × %d columns", len(f.Cat), len(f.Cardinality), f.Rows, f.NumCat)
	}
	if len(f.Dense) != f.Rows*f.NumDense {
		return fmt.Errorf("data: dense block has %d values for %d rows × %d columns", len(f.Dense), f.Rows, f.NumDense)
	}
	for k, id := range f.Cat {
		if j := k % f.NumCat; id < 0 || int(id) >= f.Cardinality[j] {
			return fmt.Errorf("data: row %d, categorical column %d: id %d outside [0, %d)", k/f.NumCat, j, id, f.Cardinality[j])
		}
	}
	return tensor.CheckFiniteSlice("dense features", f.Dense)
}

// Dataset is one split (train or test) of a table as a single party holds
// it: example IDs, features, and labels when the party has them.
type Dataset struct {
	IDs    []uint64
	X      *Features
	Labels []uint8 // 0 or 1 per row; nil for a party without labels
}
