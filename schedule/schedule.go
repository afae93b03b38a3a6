// Package schedule derives the order in which training examples are
// visited. Both parties compute it from the same seed and the same list of
// example positions, so neither has to send the other which examples make
// up a batch, and the passive party learns nothing from which batches
// exist.
package schedule

import (
	"fmt"
	"math/rand/v2"
)

// streamShuffle is the PCG stream of the epoch shuffles.
const streamShuffle = 0x5c4ed01e

// Schedule splits N examples into batches of Batch (the last batch of an
// epoch may be smaller), in a seeded random order that changes every epoch.
type Schedule struct {
	N, Batch int
	Seed     uint64
}

// New returns a schedule, or an error when the sizes cannot make one.
func New(n, batch int, seed uint64) (*Schedule, error) {
	if n <= 0 {
		return nil, fmt.Errorf("schedule: no training examples")
	}
	if batch <= 0 {
		return nil, fmt.Errorf("schedule: batch size %d, want at least 1", batch)
	}
	return &Schedule{N: n, Batch: batch, Seed: seed}, nil
}

// BatchesPerEpoch is the number of batches in every epoch.
func (s *Schedule) BatchesPerEpoch() int { return (s.N + s.Batch - 1) / s.Batch }

// Order writes epoch e's permutation of 0..N-1 into dst (reused when large
// enough) and returns it. Batch b of the epoch is order[b*Batch : min((b+1)*Batch, N)].
func (s *Schedule) Order(e int, dst []int) []int {
	if cap(dst) < s.N {
		dst = make([]int, s.N)
	}
	dst = dst[:s.N]
	for i := range dst {
		dst[i] = i
	}
	r := rand.New(rand.NewPCG(s.Seed^uint64(e)*0x9e3779b97f4a7c15, streamShuffle))
	r.Shuffle(len(dst), func(i, j int) { dst[i], dst[j] = dst[j], dst[i] })
	return dst
}

// Rows returns batch b of an epoch order computed by Order.
func (s *Schedule) Rows(order []int, b int) []int {
	return order[b*s.Batch : min((b+1)*s.Batch, s.N)]
}

// Position converts a global step into its epoch and batch index.
func (s *Schedule) Position(step int64) (epoch, batch int) {
	per := int64(s.BatchesPerEpoch())
	return int(step / per), int(step % per)
}
