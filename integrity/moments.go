package integrity

import (
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// colMoments are the running per-column mean and variance of every row
// added (Welford's algorithm).
type colMoments struct {
	n        float64
	mean, m2 []float64
}

// add adds e's rows (a change of width starts afresh).
func (m *colMoments) add(e *tensor.Matrix) {
	if len(m.mean) != e.Cols {
		m.mean, m.m2, m.n = make([]float64, e.Cols), make([]float64, e.Cols), 0
	}
	for r := range e.Rows {
		m.n++
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			d := float64(v) - m.mean[c]
			m.mean[c] += d / m.n
			m.m2[c] += d * (float64(v) - m.mean[c])
		}
	}
}

// sd is column c's sample standard deviation (0 before two rows).
func (m *colMoments) sd(c int) float64 {
	if m.n <= 1 {
		return 0
	}
	return math.Sqrt(m.m2[c] / (m.n - 1))
}

// windowMoments are the per-column mean and standard deviation of the
// rows of the last w batches added: a ring of per-batch column sums and
// sums of squares, pooled (a change of width starts afresh).
type windowMoments struct {
	w       int
	cols    int
	next    int
	filled  int
	rows    []float64   // rows of each batch in the ring
	sum, sq [][]float64 // per batch: Σx and Σx² of each column
}

// add adds e's rows as one batch, dropping the oldest past w.
func (m *windowMoments) add(e *tensor.Matrix) {
	if m.cols != e.Cols || m.sum == nil {
		m.cols, m.next, m.filled = e.Cols, 0, 0
		m.rows = make([]float64, m.w)
		m.sum, m.sq = make([][]float64, m.w), make([][]float64, m.w)
		for i := range m.w {
			m.sum[i], m.sq[i] = make([]float64, e.Cols), make([]float64, e.Cols)
		}
	}
	s, q := m.sum[m.next], m.sq[m.next]
	clear(s)
	clear(q)
	for r := range e.Rows {
		for c, v := range e.Data[r*e.Cols : (r+1)*e.Cols] {
			x := float64(v)
			s[c] += x
			q[c] += x * x
		}
	}
	m.rows[m.next] = float64(e.Rows)
	m.next = (m.next + 1) % m.w
	m.filled = min(m.filled+1, m.w)
}

// sd is column c's sample standard deviation over the window (0 before
// two rows).
func (m *windowMoments) sd(c int) float64 {
	n, s, q := 0.0, 0.0, 0.0
	for i := range m.filled {
		n += m.rows[i]
		s += m.sum[i][c]
		q += m.sq[i][c]
	}
	if n <= 1 {
		return 0
	}
	return math.Sqrt(math.Max(0, (q-s*s/n)/(n-1)))
}
