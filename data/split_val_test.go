package data

import (
	"math"
	"slices"
	"testing"
)

// TestSplitValidation checks the validation hold-out: the share of rows
// (binomial tolerance), that it depends on the ID and seed only (row order
// and the other columns do not matter), that it is independent of the
// test split's hash, and that train and validation partition the rows.
func TestSplitValidation(t *testing.T) {
	const n = 20000
	d := &Dataset{X: &Features{Rows: n, NumDense: 1}, Labels: make([]uint8, n)}
	for i := range n {
		id := uint64(i)*7919 + 13
		d.IDs = append(d.IDs, id)
		d.X.Dense = append(d.X.Dense, float32(i))
		d.Labels[i] = uint8(i % 2)
	}
	for _, frac := range []float64{0.1, 0.25} {
		train, val := SplitValidation(d, 5, frac)
		if len(train.IDs)+len(val.IDs) != n {
			t.Fatalf("%d + %d rows of %d", len(train.IDs), len(val.IDs), n)
		}
		// 4 binomial standard deviations.
		if sd := math.Sqrt(n * frac * (1 - frac)); math.Abs(float64(len(val.IDs))-n*frac) > 4*sd {
			t.Errorf("frac %v: %d validation rows, want %v ± %.0f", frac, len(val.IDs), n*frac, 4*sd)
		}
		both := 0
		for i, id := range val.IDs {
			if !InValidation(5, id, frac) || val.X.Dense[i] != float32((id-13)/7919) || val.Labels[i] != uint8((id-13)/7919%2) {
				t.Fatalf("validation row %d (ID %d) does not carry its own features and label", i, id)
			}
			if _, test := Assign(5, id, 1, 0.5); test {
				both++
			}
		}
		// Independent of the test hash: about half the validation rows
		// would be test rows at test fraction 0.5.
		if k := float64(len(val.IDs)); math.Abs(float64(both)-k/2) > 4*math.Sqrt(k/4) {
			t.Errorf("frac %v: %d of %d validation rows fall in a 50%% test split", frac, both, len(val.IDs))
		}
		for _, id := range train.IDs {
			if InValidation(5, id, frac) {
				t.Fatalf("training ID %d is a validation ID", id)
			}
		}
		// Another row order gives the same decision per ID.
		rev := SelectRows(d, reversed(n))
		_, val2 := SplitValidation(rev, 5, frac)
		a, b := slices.Clone(val.IDs), slices.Clone(val2.IDs)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("frac %v: the validation IDs depend on the row order", frac)
		}
		_, other := SplitValidation(d, 6, frac)
		if slices.Equal(other.IDs, val.IDs) {
			t.Errorf("frac %v: another seed gives the same validation rows", frac)
		}
	}
	if train, val := SplitValidation(d, 5, 0); train != d || len(val.IDs) != 0 {
		t.Error("validation fraction 0 must keep every row for training")
	}
}

func reversed(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - 1 - i
	}
	return out
}

func TestConcat(t *testing.T) {
	ids := make([]uint64, 2, 4) // spare capacity Concat must not write into
	ids[0], ids[1] = 1, 2
	a := &Dataset{IDs: ids, Labels: []uint8{0, 1},
		X: &Features{Rows: 2, NumCat: 1, Cat: []int32{3, 4}, Cardinality: []int{9}, NumDense: 1, Dense: []float32{.1, .2}}}
	b := &Dataset{IDs: []uint64{7}, Labels: []uint8{1},
		X: &Features{Rows: 1, NumCat: 1, Cat: []int32{5}, Cardinality: []int{9}, NumDense: 1, Dense: []float32{.7}}}
	c, err := Concat(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.IDs, []uint64{1, 2, 7}) || !slices.Equal(c.Labels, []uint8{0, 1, 1}) || c.X.Rows != 3 ||
		!slices.Equal(c.X.Cat, []int32{3, 4, 5}) || !slices.Equal(c.X.Dense, []float32{.1, .2, .7}) {
		t.Fatalf("concatenation %+v %+v", c, c.X)
	}
	if err := c.X.Validate(); err != nil {
		t.Fatal(err)
	}
	// Appending to a must not change c.
	a.IDs = append(a.IDs, 99)
	if c.IDs[2] != 7 {
		t.Fatal("Concat shares storage with its first argument")
	}
	b.X.NumDense = 2
	if _, err := Concat(a, b); err == nil {
		t.Fatal("tables of different columns were concatenated")
	}
	noX, err := Concat(&Dataset{IDs: []uint64{1}}, &Dataset{IDs: []uint64{2}})
	if err != nil || noX.X != nil || len(noX.IDs) != 2 {
		t.Fatalf("concatenating featureless sets: %v %+v", err, noX)
	}
}
