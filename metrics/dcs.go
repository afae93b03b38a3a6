package metrics

import "math"

// DCSBeta is the weight β of the main task in [DCS] that VFLAIR uses.
const DCSBeta = 0.5

// DCS is VFLAIR's defence capability score of a defence that leaves an
// attack the performance ap and the main task the performance mp, against
// the ideal defence (apIdeal, mpIdeal):
//
//	DCS = 1 / (1 + √((1−β)·(ap − apIdeal)² + β·(mp − mpIdeal)²)),
//
// 1 at the ideal point and falling with the weighted distance from it.
// β ∈ [0, 1] weighs the main task against the attack. It returns NaN when
// an argument is NaN or β is outside [0, 1].
func DCS(ap, apIdeal, mp, mpIdeal, beta float64) float64 {
	if !(beta >= 0 && beta <= 1) {
		return math.NaN()
	}
	da, dm := ap-apIdeal, mp-mpIdeal
	return 1 / (1 + math.Sqrt((1-beta)*da*da+beta*dm*dm))
}

// MeanDCS is the T-DCS of VFLAIR: the mean of one defence's DCS over the
// attacks of a type, each counted once. NaN entries (an attack without a
// figure) are left out; it returns NaN when none is left.
func MeanDCS(dcs []float64) float64 {
	var s float64
	n := 0
	for _, v := range dcs {
		if !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}
