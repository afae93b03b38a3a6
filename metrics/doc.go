// Package metrics computes splitguard's privacy and utility numbers: the
// exact leak AUC (Mann–Whitney, ties counted as ½, never flipped), the
// nearest-rank quantile used to summarise a run, the per-batch leak
// accumulator [Leak] and the chance floor of its summary ([ChanceQ95Abs]),
// the Poisson-bootstrap intervals of a test AUC and of a difference of two
// ([AUCBootstrap], [AUCDiffBootstrap]), the adaptive calibration error
// [ACE], the mean binary cross-entropy [BCE] and the defence capability
// score ([DCS]).
//
// Labels are []uint8 throughout: 0 is negative and every other value is
// positive. Scores and probabilities are float64.
//
// The package-level functions allocate scratch on every call; for per-batch
// use keep a [Scratch] (one per goroutine), whose methods allocate nothing
// once its buffers have grown to the batch size.
package metrics
