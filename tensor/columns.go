package tensor

// ColumnMoments is the mean of column j of m and its population variance
// (the mean squared deviation from that mean), summed in float64 over two
// passes so that a large common offset does not cancel the variance away.
// A matrix with no rows gives zeros.
func ColumnMoments(m *Matrix, j int) (mean, variance float64) {
	if m.Rows == 0 {
		return 0, 0
	}
	for i := range m.Rows {
		mean += float64(m.Data[i*m.Cols+j])
	}
	mean /= float64(m.Rows)
	for i := range m.Rows {
		d := float64(m.Data[i*m.Cols+j]) - mean
		variance += d * d
	}
	return mean, variance / float64(m.Rows)
}

// MeanColumnVariance is the mean over m's columns of their population
// variances (ColumnMoments); 0 for a matrix with no rows or no columns.
func MeanColumnVariance(m *Matrix) float64 {
	if m.Rows == 0 || m.Cols == 0 {
		return 0
	}
	var total float64
	for j := range m.Cols {
		_, v := ColumnMoments(m, j)
		total += v
	}
	return total / float64(m.Cols)
}

// SideBySide writes the columns of ms side by side, in order, into dst
// (resized; nil: a new matrix) and returns it: row r is row r of each
// matrix in turn. The matrices must have the same rows.
func SideBySide(dst *Matrix, ms ...*Matrix) *Matrix {
	cols := 0
	for _, m := range ms {
		cols += m.Cols
	}
	rows := 0
	if len(ms) > 0 {
		rows = ms[0].Rows
	}
	dst = dst.Resize(rows, cols)
	for r := range rows {
		at := r * cols
		for _, m := range ms {
			at += copy(dst.Data[at:], m.Row(r))
		}
	}
	return dst
}
