package fanin

import (
	"reflect"
	"testing"

	"github.com/splitguard/splitguard/tensor"
)

func TestCoalitions(t *testing.T) {
	for _, c := range []struct {
		k    int
		want [][]int
	}{
		{1, [][]int{{0}}},
		{2, [][]int{{0}, {1}, {0, 1}}},
		{3, [][]int{{0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}}},
	} {
		if got := Coalitions(c.k); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Coalitions(%d) = %v, want %v", c.k, got, c.want)
		}
	}
}

func TestGather(t *testing.T) {
	m := &tensor.Matrix{Rows: 2, Cols: 5, Data: []float32{0, 1, 2, 3, 4, 10, 11, 12, 13, 14}}
	for _, c := range []struct {
		ranges [][2]int
		cols   int
		want   []float32
	}{
		{[][2]int{{1, 3}}, 2, []float32{1, 2, 11, 12}},
		{[][2]int{{0, 1}, {3, 5}}, 3, []float32{0, 3, 4, 10, 13, 14}},
		{[][2]int{{0, 5}}, 5, m.Data},
	} {
		got := Gather(&tensor.Matrix{Data: make([]float32, 1, 16)}, m, c.ranges)
		if got.Rows != 2 || got.Cols != c.cols || !reflect.DeepEqual(got.Data, c.want) {
			t.Errorf("Gather %v = %dx%d %v, want 2x%d %v", c.ranges, got.Rows, got.Cols, got.Data, c.cols, c.want)
		}
	}
}
