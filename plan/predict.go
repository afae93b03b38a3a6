package plan

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// PredictionLevel is the level of the one-sided prediction bound
// (predictionUpper) on the leak of a seed the plan never trained, judged
// against the leak limit when the recommendation is confirmed.
const PredictionLevel = 0.95

// predictionUpper returns the one-sided upper prediction bound at level
// for one further value drawn as the values x were: mean +
// t(n−1, level)·s·√(1 + 1/n), with n values, their mean and their sample
// standard deviation s (divisor n − 1), t(ν, p) Student's t quantile. It
// assumes the values are independent draws from one normal distribution;
// then a further draw exceeds the bound with probability 1 − level.
// NaN for fewer than two values or a NaN among them.
func predictionUpper(x []float64, level float64) float64 {
	n := len(x)
	if n < 2 {
		return math.NaN()
	}
	mean, s := meanSD(x)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(level)
	return mean + t*s*math.Sqrt(1+1/float64(n))
}

// meanSD returns the mean of x and its sample standard deviation
// (divisor len(x) − 1; NaN for one value).
func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}
