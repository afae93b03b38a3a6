package metrics

import "math"

// AUCStdErr is the standard error of an AUC estimated from pos positive
// and neg negative rows, by Hanley and McNeil's closed form (Radiology
// 143, 1982, eq. 2):
//
//	SE² = (A(1−A) + (pos−1)(Q1−A²) + (neg−1)(Q2−A²)) / (pos·neg),
//	Q1 = A/(2−A), Q2 = 2A²/(1+A),
//
// Q1 and Q2 being the chances that two positives both outscore one
// negative and that one positive outscores two negatives, taken from
// exponential score distributions (for which the form is exact). It is
// NaN without a row of each class or for an AUC outside [0, 1].
func AUCStdErr(auc float64, pos, neg int) float64 {
	if pos < 1 || neg < 1 || !(auc >= 0 && auc <= 1) {
		return math.NaN()
	}
	a := auc
	q1, q2 := a/(2-a), 2*a*a/(1+a)
	v := (a*(1-a) + float64(pos-1)*(q1-a*a) + float64(neg-1)*(q2-a*a)) / (float64(pos) * float64(neg))
	return math.Sqrt(max(0, v))
}
