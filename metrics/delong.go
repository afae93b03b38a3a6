package metrics

import (
	"errors"
	"math"
	"slices"
)

// PairedAUC is two models' AUCs on the same rows and the sampling
// variance of their difference by DeLong's method (DeLong, DeLong and
// Clarke-Pearson, Biometrics 44, 1988), computed in O(n log n) from
// midranks as Sun and Xu give it (IEEE Signal Processing Letters 21,
// 2014).
type PairedAUC struct {
	// A and B are the two AUCs (ties count ½).
	A, B float64
	// VarA and VarB are each AUC's variance, VarDiff the variance of
	// A − B: (S10_AA + S10_BB − 2·S10_AB)/m + (S01_AA + S01_BB −
	// 2·S01_AB)/n, S10 the covariance over the m positives of their
	// placement values (the share of negatives each outscores), S01 that
	// over the n negatives (the share of positives that outscore each),
	// both with divisor count − 1.
	VarA, VarB, VarDiff float64
	// S10 and S01 are the placement values' covariance matrices, [AA, BB,
	// AB]: what a variance on another number of rows is computed from
	// (VarDiffAt).
	S10, S01 [3]float64
	// Pos and Neg are the rows of each class.
	Pos, Neg int
}

// VarDiffAt is the variance of A − B for pos positive and neg negative
// rows drawn as these were: the same placement covariances over other
// counts.
func (p PairedAUC) VarDiffAt(pos, neg int) float64 {
	return (p.S10[0]+p.S10[1]-2*p.S10[2])/float64(pos) + (p.S01[0]+p.S01[1]-2*p.S01[2])/float64(neg)
}

// DeLongPaired returns the AUCs of scores a and b (two models' scores of
// the same rows, in the same order) against labels (1 positive) and
// DeLong's variances. It needs at least two rows of each class and
// finite scores.
func DeLongPaired(a, b []float64, labels []uint8) (PairedAUC, error) {
	if len(a) != len(labels) || len(b) != len(labels) {
		return PairedAUC{}, errors.New("metrics: DeLong: the two models' scores and the labels differ in length")
	}
	var pos, neg []int
	for i, l := range labels {
		if math.IsNaN(a[i]) || math.IsInf(a[i], 0) || math.IsNaN(b[i]) || math.IsInf(b[i], 0) {
			return PairedAUC{}, errors.New("metrics: DeLong: a score is not finite")
		}
		if l == 1 {
			pos = append(pos, i)
		} else {
			neg = append(neg, i)
		}
	}
	m, n := len(pos), len(neg)
	if m < 2 || n < 2 {
		return PairedAUC{}, errors.New("metrics: DeLong: fewer than two rows of a class")
	}
	out := PairedAUC{Pos: m, Neg: n}
	v10 := [2][]float64{make([]float64, m), make([]float64, m)}
	v01 := [2][]float64{make([]float64, n), make([]float64, n)}
	auc := [2]float64{}
	for k, s := range [2][]float64{a, b} {
		px, ny := pick(s, pos), pick(s, neg)
		tx, ty, tz := midranks(px), midranks(ny), midranks(append(slices.Clone(px), ny...))
		for i := range m {
			v10[k][i] = (tz[i] - tx[i]) / float64(n)
			auc[k] += v10[k][i]
		}
		for j := range n {
			v01[k][j] = 1 - (tz[m+j]-ty[j])/float64(m)
		}
		auc[k] /= float64(m)
	}
	out.A, out.B = auc[0], auc[1]
	out.S10 = [3]float64{cov(v10[0], v10[0]), cov(v10[1], v10[1]), cov(v10[0], v10[1])}
	out.S01 = [3]float64{cov(v01[0], v01[0]), cov(v01[1], v01[1]), cov(v01[0], v01[1])}
	out.VarA = out.S10[0]/float64(m) + out.S01[0]/float64(n)
	out.VarB = out.S10[1]/float64(m) + out.S01[1]/float64(n)
	out.VarDiff = max(0, out.VarDiffAt(m, n))
	return out, nil
}

// pick returns s at rows.
func pick(s []float64, rows []int) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = s[r]
	}
	return out
}

// midranks returns each value's rank in x, 1 for the smallest, tied
// values sharing the mean of their ranks.
func midranks(x []float64) []float64 {
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		switch {
		case x[i] < x[j]:
			return -1
		case x[i] > x[j]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(x))
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && x[order[j]] == x[order[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1 … j
		for k := i; k < j; k++ {
			r[order[k]] = mid
		}
		i = j
	}
	return r
}

// cov is the sample covariance of x and y (divisor len − 1).
func cov(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	s := 0.0
	for i := range x {
		s += (x[i] - mx) * (y[i] - my)
	}
	return s / float64(len(x)-1)
}
