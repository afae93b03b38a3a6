package audit

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/tensor"
)

// streamMultiClass is the PCG stream of the multi-class attack's k-means
// seeding.
const streamMultiClass = 0x3c1a55

// MultiClassResult is the multi-class spectral attack (METHODS §3,
// attack.MultiClassAccuracy) on one batch whose examples carry a class
// with more than two values (e.g. Fashion-MNIST's ten, where the run's
// binary task keeps one class positive).
type MultiClassResult struct {
	Step    int64 `json:"step"`
	Rows    int   `json:"rows"`
	Classes int   `json:"classes"` // distinct classes in the batch (k of k-means)
	// Accuracy is the share of rows whose k-means cluster, matched to the
	// classes by size, is their class.
	Accuracy float64 `json:"accuracy"`
	// Majority is the share of the most frequent class: the accuracy of
	// calling every row that class, the floor a leak must beat.
	Majority float64 `json:"majority"`
}

// MultiClass runs the multi-class attack on x (one row per example of a
// batch) against classes[ids[i]], the class of each row's example ID. The
// k-means seeding is drawn from a PCG seeded with (seed, step), so a batch
// gives the same result whatever else is audited. An ID outside classes is
// an error.
func MultiClass(step int64, x *tensor.Matrix, ids []uint64, classes []uint8, seed uint64) (MultiClassResult, error) {
	res := MultiClassResult{Step: step, Rows: x.Rows}
	if len(ids) != x.Rows {
		return res, fmt.Errorf("audit: multi-class: step %d: %d IDs for %d rows", step, len(ids), x.Rows)
	}
	labels := make([]uint8, len(ids))
	var count [256]int
	for i, id := range ids {
		if id >= uint64(len(classes)) {
			return res, fmt.Errorf("audit: multi-class: step %d: example ID %d has no class (%d classes given)", step, id, len(classes))
		}
		labels[i] = classes[id]
		count[labels[i]]++
	}
	for _, c := range count {
		if c > 0 {
			res.Classes++
		}
		if x.Rows > 0 {
			res.Majority = max(res.Majority, float64(c)/float64(x.Rows))
		}
	}
	rng := rand.New(rand.NewPCG(seed^uint64(step), streamMultiClass))
	acc, err := attack.MultiClassAccuracy(x, labels, rng)
	if err != nil {
		return res, fmt.Errorf("audit: multi-class: step %d: %w", step, err)
	}
	res.Accuracy = acc
	return res, nil
}
