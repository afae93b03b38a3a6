package data

import (
	"fmt"
	"slices"
)

// ColumnNames returns f's feature column names: the categorical ones, then
// the dense ones, each in file order.
func (f *Features) ColumnNames() []string {
	return append(slices.Clone(f.CatNames), f.DenseNames...)
}

// SelectColumns returns the features of f's named columns, in f's order
// (categorical then dense, each in file order, whatever the order of
// names): the table a party holding only those columns loads
// (Options.Columns) from the same file. An unknown or repeated name is an
// error; an empty list gives a table with no columns.
func SelectColumns(f *Features, names []string) (*Features, error) {
	if f.Image != nil {
		return nil, fmt.Errorf("data: columns %v: the features are images, not a table", names)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		if want[n] {
			return nil, fmt.Errorf("data: column %q named twice", n)
		}
		want[n] = true
	}
	var cats, dense []int
	for j, n := range f.CatNames {
		if want[n] {
			cats = append(cats, j)
			delete(want, n)
		}
	}
	for j, n := range f.DenseNames {
		if want[n] {
			dense = append(dense, j)
			delete(want, n)
		}
	}
	for _, n := range names {
		if want[n] {
			return nil, fmt.Errorf("data: column %q is not a feature column of the table (its columns: %v)", n, f.ColumnNames())
		}
	}
	out := &Features{Rows: f.Rows, NumCat: len(cats), NumDense: len(dense),
		Cat: make([]int32, f.Rows*len(cats)), Dense: make([]float32, f.Rows*len(dense))}
	for _, j := range cats {
		out.Cardinality = append(out.Cardinality, f.Cardinality[j])
		out.CatNames = append(out.CatNames, f.CatNames[j])
	}
	for _, j := range dense {
		out.DenseNames = append(out.DenseNames, f.DenseNames[j])
	}
	for r := 0; r < f.Rows; r++ {
		for k, j := range cats {
			out.Cat[r*len(cats)+k] = f.Cat[r*f.NumCat+j]
		}
		for k, j := range dense {
			out.Dense[r*len(dense)+k] = f.Dense[r*f.NumDense+j]
		}
	}
	return out, nil
}

// Complement returns f's column names that are not in names, in f's order.
func (f *Features) Complement(names []string) []string {
	var out []string
	for _, n := range f.ColumnNames() {
		if !slices.Contains(names, n) {
			out = append(out, n)
		}
	}
	return out
}
