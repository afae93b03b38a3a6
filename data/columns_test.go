package data

import (
	"slices"
	"strings"
	"testing"
)

func TestSelectColumns(t *testing.T) {
	// Two rows of categorical a, b and dense x, y, z.
	f := &Features{Rows: 2, NumCat: 2, Cat: []int32{1, 2, 3, 4}, Cardinality: []int{5, 6}, CatNames: []string{"a", "b"},
		NumDense: 3, Dense: []float32{.1, .2, .3, .4, .5, .6}, DenseNames: []string{"x", "y", "z"}}
	for _, tc := range []struct {
		names     []string
		cat       []int32
		card      []int
		dense     []float32
		wantNames []string
		err       string
	}{
		{names: []string{"z", "b"}, cat: []int32{2, 4}, card: []int{6}, dense: []float32{.3, .6}, wantNames: []string{"b", "z"}},
		{names: []string{"x", "y", "z", "a", "b"}, cat: []int32{1, 2, 3, 4}, card: []int{5, 6}, dense: f.Dense, wantNames: []string{"a", "b", "x", "y", "z"}},
		{names: nil, cat: []int32{}, dense: []float32{}},
		{names: []string{"a", "q"}, err: `column "q" is not`},
		{names: []string{"a", "a"}, err: `"a" named twice`},
	} {
		got, err := SelectColumns(f, tc.names)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.names, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Cat, tc.cat) || !slices.Equal(got.Cardinality, tc.card) || !slices.Equal(got.Dense, tc.dense) ||
			!slices.Equal(got.ColumnNames(), tc.wantNames) || got.Rows != 2 || got.Validate() != nil {
			t.Errorf("%v: got %+v", tc.names, got)
		}
	}
	if c := f.Complement([]string{"b", "y"}); !slices.Equal(c, []string{"a", "x", "z"}) {
		t.Errorf("complement %v, want [a x z]", c)
	}
}
