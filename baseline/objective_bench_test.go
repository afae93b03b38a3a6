package baseline

import "testing"

// BenchmarkObjective times one loss-and-gradient pass over a table shaped
// like the runs' baseline fit: 50,000 rows, 26 categorical columns of
// 4,000 ids each, 13 numeric columns, serially (as beside training).
func BenchmarkObjective(b *testing.B) {
	d := table(50000, 26, 4000, 13, 3)
	des := newDesign(d.X, d.Labels, len(d.IDs))
	des.serial = true
	theta := make([]float64, des.p+1)
	for k := range theta {
		theta[k] = 0.01 * float64(k%13-6)
	}
	grad := make([]float64, len(theta))
	for b.Loop() {
		des.objective(theta, grad, 1e-3)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/50000, "ns/row")
}
