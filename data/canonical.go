package data

import (
	"slices"
)

// SortByID puts d's rows in ascending order of example ID (stable: rows
// with equal IDs keep their file order). Both the in-process run and the
// networked parties use this canonical order, so that the shared seeded
// schedule picks the same examples whatever order each party's file has.
func SortByID(d *Dataset) {
	if d == nil || slices.IsSorted(d.IDs) {
		return
	}
	rows := make([]int, len(d.IDs))
	for i := range rows {
		rows[i] = i
	}
	slices.SortStableFunc(rows, func(a, b int) int {
		switch {
		case d.IDs[a] < d.IDs[b]:
			return -1
		case d.IDs[a] > d.IDs[b]:
			return 1
		}
		return 0
	})
	*d = *SelectRows(d, rows)
}

// SelectRows returns a new dataset made of d's given rows, in that order.
func SelectRows(d *Dataset, rows []int) *Dataset {
	out := &Dataset{IDs: make([]uint64, len(rows))}
	for i, r := range rows {
		out.IDs[i] = d.IDs[r]
	}
	if d.Labels != nil {
		out.Labels = make([]uint8, len(rows))
		for i, r := range rows {
			out.Labels[i] = d.Labels[r]
		}
	}
	if d.X != nil {
		x := *d.X
		x.Rows = len(rows)
		x.Cat = make([]int32, len(rows)*x.NumCat)
		x.Dense = make([]float32, len(rows)*x.NumDense)
		copyRowRuns(x.Cat, d.X.Cat, x.NumCat, rows)
		copyRowRuns(x.Dense, d.X.Dense, x.NumDense, rows)
		out.X = &x
	}
	return out
}

// SortByID puts both splits' rows in the canonical order (see [SortByID]).
func (s *Split) SortByID() {
	SortByID(s.Train)
	SortByID(s.Test)
}

// copyRowRuns copies rows rows of src (width values each) into dst, in
// order, a run of consecutive rows with one copy: a split that keeps
// most rows (a validation split keeps nine in ten) then moves its table
// in long blocks instead of a short copy per row.
func copyRowRuns[T any](dst, src []T, width int, rows []int) {
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j] == rows[j-1]+1 {
			j++
		}
		copy(dst[i*width:j*width], src[rows[i]*width:(rows[j-1]+1)*width])
		i = j
	}
}
