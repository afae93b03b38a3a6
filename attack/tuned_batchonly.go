package attack

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/buf"
)

// BatchOnly is implemented by an attack whose Score is a function of the
// observation's batch (its layer, gradient or output, oracle and hints) and
// of the attack's own settings alone: it reads neither Observation.Known
// nor Observation.KnownLabels, keeps nothing from one call to the next and
// scores every row. [Tuned] then scores each candidate once per batch and
// uses those scores for both folds and for the chosen candidate's answer,
// which the two folds' and the answer's separate calls would repeat
// exactly: budget calls of Score per batch and layer instead of
// 2·budget + 1.
type BatchOnly interface {
	Attack
	// BatchOnly marks the attack; it does nothing.
	BatchOnly()
}

// tunedCache holds, for one batch, the scores of the candidates scored so
// far.
type tunedCache struct {
	n      int
	scores []float64 // candidate c's at [c·n, (c+1)·n)
	scored []bool
	have   []bool
}

// reset empties the cache for a batch of n rows and cands candidates.
func (k *tunedCache) reset(cands, n int) {
	k.n = n
	k.scores, k.scored = buf.Grow(k.scores, cands*n), buf.Grow(k.scored, cands*n)
	k.have = buf.Grow(k.have, cands)
	clear(k.have)
}

// score returns candidate c's scores and scored rows for the batch,
// calling inst only the first time.
func (k *tunedCache) score(inst Attack, c int, obs *Observation) ([]float64, []bool, error) {
	s, f := k.scores[c*k.n:(c+1)*k.n], k.scored[c*k.n:(c+1)*k.n]
	if !k.have[c] {
		fill(f, true)
		if err := inst.Score(obs, s, f); err != nil {
			return nil, nil, fmt.Errorf("tuned: %w", err)
		}
		k.have[c] = true
	}
	return s, f, nil
}
