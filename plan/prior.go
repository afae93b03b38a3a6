package plan

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitguard/splitguard/atomicfile"
	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/run"
	"github.com/splitguard/splitguard/rundir"
)

// The feature prior (docs/methods/plan.md, "Embedding attacks: the leak
// beyond the passive's own features"): an embedding attack reads the
// passive's forward outputs, which are a function of the passive's own
// columns and its bottom model. What the attack reads from the bottom as
// it was initialised, before any message was exchanged, the passive knows
// without the protocol, and no protection can remove it. The plan
// measures it per seed with a run of the reference (no defence) whose
// learning rate is PriorLR, so that its bottom stays at its
// initialisation, over the same schedule and step cap as the settings'
// runs, with the threat's embedding attacks only; an embedding attack's
// figures of a setting are then judged net of it (netOfPrior).

// PriorLR is the learning rate of a feature-prior run. Adam moves a
// parameter by at most a few times the learning rate per step, so 400
// steps at 1e-12 change no weight by more than about 1e-9, below the
// rounding of a float32 weight of the bottoms' scale (1e-2 to 1): the
// bottom is its initialisation at every batch (on spam after 59 steps:
// every weight bit-identical, the biases, which start at 0, within
// 1.3e-15). (A learning rate of 0 means "chosen from the data" to the
// configuration.)
const PriorLR = 1e-12

// PriorFile is the configuration of the plan's feature-prior run (out
// empty), for `train --config PriorFile --seed S` on a fresh seed
// (scripts/plan-acceptance.sh).
const PriorFile = "feature-prior.yaml"

// embeddingAttacks returns the attacks of names that read a layer's
// forward output (attack.Needs.Input is attack.Embedding).
func embeddingAttacks(names []string) []string {
	var out []string
	for _, n := range names {
		if d, err := attack.Describe(n); err == nil && d.Input == attack.Embedding && !d.Model {
			out = append(out, n)
		}
	}
	return out
}

// priorDir is the run directory of the feature-prior run of seed.
func priorDir(out string, seed uint64) string {
	return filepath.Join(out, "runs", fmt.Sprintf("feature_prior_seed=%d", seed))
}

// priorConfig is the configuration of the feature-prior run of the
// plan's seed (out empty); nil attacks when the threat has no embedding
// attack.
func (o *Options) priorConfig(attacks []string) config.Config {
	c := o.runConfig(Reference, embeddingAttacks(attacks))
	c.LR, c.EarlyStop = PriorLR, 0
	return c
}

// featurePrior returns the leak summaries of the feature-prior run of
// seed (trained once per invocation and seed: a run of a few seconds,
// left out of the clock's run times so that it does not shorten the time
// kept for a setting), or nil when the threat has no embedding attack.
func (o *Options) featurePrior(ctx context.Context, seed uint64, attacks []string) (map[string]metrics.LeakSummary, error) {
	if p, ok := o.priors[seed]; ok {
		return p, nil
	}
	cfg := o.priorConfig(attacks)
	if len(cfg.Attacks) == 0 {
		return nil, nil
	}
	if seed != o.Base.Seed {
		cfg.Seed, cfg.SplitSeed = seed, o.Base.DataSeed()
	}
	cfg.Out = priorDir(o.Out, seed)
	train := o.train
	if train == nil {
		train = run.Train
	}
	sum, err := train(ctx, cfg, run.Options{Force: true})
	if err != nil {
		return nil, fmt.Errorf("the feature prior (no defence, the bottom kept at its initialisation) with seed %d: %w", seed, err)
	}
	p := map[string]metrics.LeakSummary{}
	var text []string
	for _, k := range slices.Sorted(maps.Keys(sum.Leak)) {
		p[k] = sum.Leak[k]
		text = append(text, fmt.Sprintf("%s %.3f", k, sum.Leak[k].Q95Abs))
	}
	if o.priors == nil {
		o.priors = map[uint64]map[string]metrics.LeakSummary{}
	}
	o.priors[seed] = p
	o.logger().Info(fmt.Sprintf("feature prior, seed %d (the embedding attacks on the bottom as initialised, %s): %s",
		seed, cfg.Out, strings.Join(text, ", ")))
	return p, nil
}

// writePriorConfig writes PriorFile, the feature-prior run's
// configuration, when the threat has an embedding attack.
func (o *Options) writePriorConfig(attacks []string) error {
	c := o.priorConfig(attacks)
	if len(c.Attacks) == 0 {
		return nil
	}
	y, err := config.Marshal(&c)
	if err != nil {
		return err
	}
	head := "# The feature prior of this plan: no defence, learning rate 1e-12 (the bottom stays as initialised),\n" +
		"# the threat's embedding attacks; train it with a run's seed and split_seed to judge that run's\n" +
		"# embedding attacks net of what the passive's own columns give them (docs/methods/plan.md).\n"
	return atomicfile.WriteFile(filepath.Join(o.Out, PriorFile), append([]byte(head), y...), 0o644)
}

// netOfPrior rewrites, in s, the figures of every series that prior has
// (the embedding attacks, keyed "ATTACK/LAYER") as the leak beyond the
// feature prior on the chance scale, with P = max(prior q95_abs, prior
// chance_q95_abs):
//
//	q95_abs       ← max(0, chance_q95_abs + q95_abs − P),
//	q95_abs_upper ← max(0, chance_q95_abs + q95_abs_upper − P),
//
// so that a setting whose embedding attack reads no more than it reads
// from the bottom as initialised is judged as a label-blind score (at its
// chance floor), and every figure beyond is what the protocol added. A
// prior below its own chance floor is sampling noise of columns that carry
// nothing (no score gives less than a coin in expectation), so it counts
// as the floor: the net figure is then the raw one (up to the two series'
// floors' difference), never more. The
// other series (the gradient attacks, which have no prior: the passive
// has no gradient without the protocol) are left as they are. s is the
// caller's copy; the run directory keeps the raw figures.
func netOfPrior(s *rundir.Summary, prior map[string]metrics.LeakSummary) {
	for k, l := range s.Leak {
		p, ok := prior[k]
		if !ok || math.IsNaN(p.Q95Abs) || math.IsNaN(l.ChanceQ95Abs) {
			continue
		}
		pq := p.Q95Abs
		if p.ChanceQ95Abs > pq {
			pq = p.ChanceQ95Abs
		}
		l.Q95Abs = max(0, l.ChanceQ95Abs+l.Q95Abs-pq)
		if !math.IsNaN(l.Q95AbsUpper) {
			l.Q95AbsUpper = max(0, l.ChanceQ95Abs+l.Q95AbsUpper-pq)
		}
		s.Leak[k] = l
	}
}
