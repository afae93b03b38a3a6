package fanin

import "github.com/splitguard/splitguard/tensor"

// Coalitions lists every one of k passive parties alone, then every
// subset of two or more, smallest first, each in party order (0-based
// indices): the views an audit of colluding passive parties scores.
func Coalitions(k int) [][]int {
	var out [][]int
	for size := 1; size <= k; size++ {
		for mask := 1; mask < 1<<k; mask++ {
			var m []int
			for i := range k {
				if mask&(1<<i) != 0 {
					m = append(m, i)
				}
			}
			if len(m) == size {
				out = append(out, m)
			}
		}
	}
	return out
}

// Gather copies the column ranges [lo, hi) of m, side by side in their
// order, into dst (resized; reused when large enough) and returns it.
func Gather(dst, m *tensor.Matrix, ranges [][2]int) *tensor.Matrix {
	w := 0
	for _, r := range ranges {
		w += r[1] - r[0]
	}
	dst = dst.Resize(m.Rows, w)
	out := dst.Data
	for row := range m.Rows {
		at := row * w
		for _, c := range ranges {
			at += copy(out[at:], m.Data[row*m.Cols+c[0]:row*m.Cols+c[1]])
		}
	}
	return dst
}
