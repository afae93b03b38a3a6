package metrics_test

import (
	"fmt"

	"github.com/splitguard/splitguard/metrics"
)

// AUC scores how well an attack's scores rank the positives above the
// negatives. Here the positives (rows 0 and 2) beat the negatives in 4 of
// the 6 (positive, negative) pairs: row 0 beats all three, row 2 only
// row 4. Leaving row 2 out with the mask leaves a perfect ranking, and a
// batch of one class has no AUC.
func ExampleAUC() {
	scores := []float64{0.9, 0.8, 0.3, 0.6, 0.1}
	labels := []uint8{1, 0, 1, 0, 0}
	auc, ok := metrics.AUC(scores, labels, nil)
	fmt.Printf("AUC %.4f (defined: %v)\n", auc, ok)

	auc, ok = metrics.AUC(scores, labels, []bool{true, true, false, true, true})
	fmt.Printf("without row 2: AUC %.4f (defined: %v)\n", auc, ok)

	// A tie between a positive and a negative counts one half.
	auc, _ = metrics.AUC([]float64{0.5, 0.5}, []uint8{1, 0}, nil)
	fmt.Printf("a tie: AUC %.4f\n", auc)

	_, ok = metrics.AUC([]float64{0.2, 0.7}, []uint8{0, 0}, nil)
	fmt.Printf("negatives only: defined: %v\n", ok)
	// Output:
	// AUC 0.6667 (defined: true)
	// without row 2: AUC 1.0000 (defined: true)
	// a tie: AUC 0.5000
	// negatives only: defined: false
}

// AUCBootstrap bounds a test AUC by what the test rows alone allow, and
// AUCDiffBootstrap bounds the difference between two models scored on the
// same rows. Both are reproducible for a seed, whatever the core count.
func ExampleAUCBootstrap() {
	var scores, other []float64
	var labels []uint8
	for i := range 400 {
		y := uint8(0)
		if i%4 == 0 {
			y = 1
		}
		// A model that ranks most positives high, and a weaker one.
		scores = append(scores, float64(int(y)*3+i%7))
		other = append(other, float64(int(y)*2+i%11))
		labels = append(labels, y)
	}
	auc, _ := metrics.AUC(scores, labels, nil)
	iv, _ := metrics.AUCBootstrap(scores, labels, 1000, 0.95, 1)
	fmt.Printf("AUC %.3f, 95%% interval %.3f–%.3f\n", auc, iv.Lo, iv.Hi)
	d, _ := metrics.AUCDiffBootstrap(scores, other, labels, 1000, 0.95, 1)
	fmt.Printf("better by %.3f to %.3f\n", d.Lo, d.Hi)
	// Output:
	// AUC 0.835, 95% interval 0.789–0.876
	// better by 0.096 to 0.239
}
