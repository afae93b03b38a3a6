package audit

import "fmt"

// SampleExpensive makes the auditor run the attacks whose
// attack.Needs.Expensive is set (ExPLoit, gradient matching, and their
// tuned attackers) only on the batches whose step is a multiple of every:
// steps 0, every, 2·every, …; the other attacks still score every batch.
// every 0 or 1 runs them on every batch (the default). Their leak
// summaries then count the scored batches only (metrics.LeakSummary's
// Batches), and their Observe results carry no key at the other steps.
//
// For a batch-only attack (attack.BatchOnly) the figures at the scored
// steps equal those of a run scoring every batch, and the quantiles over
// batches are estimated from a uniform, deterministic subset of them. A
// tuned attacker of an expensive attack chooses its setting from the
// scored batches only, so its figures can differ from an unsampled run's.
// Call it before the first Observe; every must be ≥ 0.
func (a *Auditor) SampleExpensive(every int) error {
	if every < 0 {
		return fmt.Errorf("audit: expensive attacks every %d batches, want ≥ 0 (0 or 1: every batch)", every)
	}
	a.expensiveEvery = every
	return nil
}

// ExpensiveEvery returns the step interval SampleExpensive set (0 or 1:
// every batch).
func (a *Auditor) ExpensiveEvery() int { return a.expensiveEvery }

// skips reports whether the attack sits out the batch of the given step
// (SampleExpensive).
func (a *Auditor) skips(expensive bool, step int64) bool {
	return expensive && a.expensiveEvery > 1 && step%int64(a.expensiveEvery) != 0
}
