// Package workset is CELU-VFL's workset table (Fu et al., "Towards
// Communication-efficient Vertical Federated Learning Training via
// Cache-enabled Local Updates", PVLDB 15(10), 2022): which of the last W
// exchanged batches each local update uses, and how much each cached row
// is trusted. Both parties use it symmetrically: the active party caches
// the embeddings it received, the passive party the gradients.
package workset

import (
	"fmt"
	"math"
)

// Table tracks which slots hold the last W batches and which slot the
// next local update uses. The caller keeps the cached messages in its own
// arrays indexed by slot.
type Table struct {
	w    int
	n    int64 // batches added
	next int64 // local updates drawn
}

// New returns an empty table of w slots (w ≥ 1).
func New(w int) (*Table, error) {
	if w < 1 {
		return nil, fmt.Errorf("workset: %d slots, want ≥ 1", w)
	}
	return &Table{w: w}, nil
}

// Reset empties the table.
func (t *Table) Reset() { t.n, t.next = 0, 0 }

// Add records a freshly exchanged batch, evicting the oldest when the
// table is full, and returns its slot: batch i (from 0) goes to slot
// i mod W.
func (t *Table) Add() int {
	s := int(t.n % int64(t.w))
	t.n++
	return s
}

// Pick returns the slot the next local update uses: CELU-VFL's uniform
// sampling as a round robin over the filled slots (the m-th local update
// of the run, from 0, uses slot m mod F with F = min(batches added, W)),
// so that the cached batches are used in turn rather than the newest
// over and over. It panics on an empty table.
func (t *Table) Pick() int {
	f := min(t.n, int64(t.w))
	if f == 0 {
		panic("workset: Pick on an empty table")
	}
	s := int(t.next % f)
	t.next++
	return s
}

// Weights sets out[i], for each of the rows of stale and fresh (row-major,
// cols wide), to CELU-VFL's instance weight: the cosine similarity of the
// stale and the fresh row when it is at least xi, else 0 (the row is
// dropped from the local update). Two zero rows are identical (weight 1);
// a zero row against a non-zero one has similarity 0. It returns how many
// rows were kept.
func Weights(stale, fresh []float32, cols int, xi float64, out []float32) (int, error) {
	if cols < 1 || len(stale) != len(fresh) || len(stale)%cols != 0 || len(out) != len(stale)/cols {
		return 0, fmt.Errorf("workset: weights of %d and %d values in rows of %d into %d weights", len(stale), len(fresh), cols, len(out))
	}
	kept := 0
	for i := range out {
		a, b := stale[i*cols:(i+1)*cols], fresh[i*cols:(i+1)*cols]
		var ab, aa, bb float64
		for j := range a {
			x, y := float64(a[j]), float64(b[j])
			ab += x * y
			aa += x * x
			bb += y * y
		}
		var c float64
		switch {
		case aa == 0 && bb == 0:
			c = 1
		case aa == 0 || bb == 0:
			c = 0
		default:
			c = math.Max(-1, math.Min(1, ab/math.Sqrt(aa*bb)))
		}
		if c >= xi {
			out[i] = float32(c)
			kept++
		} else {
			out[i] = 0
		}
	}
	return kept, nil
}
