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
