package tensor

import (
	"math"
	"slices"
	"testing"
)

// TestColumnMoments checks the moments against values worked out by hand.
func TestColumnMoments(t *testing.T) {
	// Column 0: 1, 2, 3, 6 — mean 3, deviations −2, −1, 0, 3, squares
	// summing to 14: variance 14/4 = 3.5. Column 1 is constant: variance 0.
	// Column 2: 10001, 10002, 10003, 10002 — mean 10002, squares 1+0+1+0:
	// variance 0.5 (exact in float32; a one-pass Σx² − n·x̄² loses it).
	m := FromSlice(4, 3, []float32{
		1, 5, 10001,
		2, 5, 10002,
		3, 5, 10003,
		6, 5, 10002,
	})
	for _, c := range []struct {
		col            int
		mean, variance float64
	}{{0, 3, 3.5}, {1, 5, 0}, {2, 10002, 0.5}} {
		mean, v := ColumnMoments(m, c.col)
		if mean != c.mean || v != c.variance {
			t.Errorf("column %d: mean %v variance %v, want %v %v", c.col, mean, v, c.mean, c.variance)
		}
	}
	if got, want := MeanColumnVariance(m), (3.5+0+0.5)/3; math.Abs(got-want) > 1e-15 {
		t.Errorf("MeanColumnVariance = %v, want %v", got, want)
	}
	for _, empty := range []*Matrix{New(0, 3), New(3, 0)} {
		if got := MeanColumnVariance(empty); got != 0 {
			t.Errorf("MeanColumnVariance of a %dx%d matrix = %v, want 0", empty.Rows, empty.Cols, got)
		}
	}
	if mean, v := ColumnMoments(New(0, 2), 1); mean != 0 || v != 0 {
		t.Errorf("ColumnMoments of no rows = %v %v, want 0 0", mean, v)
	}
}

// TestSideBySide joins a 2×1, a 2×2 and a 2×0 matrix into a 2×3 one,
// written out by hand, reusing a destination that was larger.
func TestSideBySide(t *testing.T) {
	a := FromSlice(2, 1, []float32{1, 2})
	b := FromSlice(2, 2, []float32{3, 4, 5, 6})
	empty := New(2, 0)
	dst := New(4, 4)
	got := SideBySide(dst, a, empty, b)
	want := []float32{1, 3, 4, 2, 5, 6}
	if got != dst || got.Rows != 2 || got.Cols != 3 || !slices.Equal(got.Data, want) {
		t.Errorf("got %d×%d %v (reused %v), want 2×3 %v", got.Rows, got.Cols, got.Data, got == dst, want)
	}
	if one := SideBySide(nil, b); one.Rows != 2 || one.Cols != 2 || !slices.Equal(one.Data, b.Data) {
		t.Errorf("one matrix: %d×%d %v, want b", one.Rows, one.Cols, one.Data)
	}
}
