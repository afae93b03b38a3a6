package audit

import (
	"fmt"
	"sort"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/metrics"
)

// Tune adds beside every configured per-batch attack its tuned attacker
// (attack.Tuned, docs/methods/tuned.md), which knows the labels of known
// rows of every batch (the same known rows the known-label attacks get,
// drawn from the seed and step alone) and tries budget candidate settings
// drawn from the auditor's seed. Its figures are keyed "ATTACK_tuned/LAYER".
// Call it once, before the first Observe; known must be in [2, 64].
func (a *Auditor) Tune(known, budget int) error {
	if len(a.tuned) > 0 {
		return fmt.Errorf("audit: the tuned attackers are already on")
	}
	if known < 2 || known > maxKnownRows || budget < 1 {
		return fmt.Errorf("audit: tuned attacker with %d known rows and a budget of %d; want known rows in [2, %d] and a budget ≥ 1", known, budget, maxKnownRows)
	}
	add := func(list []attack.Attack) ([]attack.Attack, error) {
		out := list
		for _, at := range list {
			tu, err := attack.NewTuned(at.Name(), known, budget, a.seed)
			if err != nil {
				return nil, err
			}
			a.tuned = append(a.tuned, tu)
			out = append(out, tu)
		}
		return out, nil
	}
	var err error
	if a.grad, err = add(a.grad); err != nil {
		return err
	}
	if a.embed, err = add(a.embed); err != nil {
		return err
	}
	a.knownRows = max(a.knownRows, known)
	return nil
}

// TunedChoices returns every tuned attacker's current choice at every
// layer it has scored, keyed "ATTACK_tuned/LAYER", e.g.
// "metric=inner centre=yes sign=1 (0.712 over 40 folds)".
func (a *Auditor) TunedChoices() map[string]string {
	if len(a.tuned) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, tu := range a.tuned {
		layers := tu.Layers()
		sort.Strings(layers)
		for _, l := range layers {
			ch, _ := tu.Choice(l)
			out[metrics.Key(tu.Name(), l)] = ch.String(tu.Params())
		}
	}
	return out
}
