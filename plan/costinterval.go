package plan

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/run"
)

// CostLevel is the level of the two-sided prediction interval for a
// further seed's test cost (costInterval).
const CostLevel = 0.95

// costInterval returns the two-sided level prediction interval for the
// test cost of one further seed: mean ± t(n−1, (1+level)/2)·√(s²(1 + 1/n)
// + se²), over the n seeds' validation costs (their mean and sample
// standard deviation s, divisor n − 1) and se the standard error of a
// paired AUC difference on the test split (the split's sampling noise,
// which the seeds share and s therefore does not hold). NaN bounds for
// fewer than two costs, a NaN among them or a NaN se.
func costInterval(costs []float64, se, level float64) (lo, hi float64) {
	n := len(costs)
	if n < 2 || math.IsNaN(se) {
		return math.NaN(), math.NaN()
	}
	mean, s := meanSD(costs)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile((1 + level) / 2)
	half := t * math.Sqrt(s*s*(1+1/float64(n))+se*se)
	return mean - half, mean + half
}

// valScores returns the validation scores of the run in dir (nil:
// run.ValidationScores; a test replaces it).
func (o *Options) valScores(dir string) (*run.ValScores, error) {
	if o.scores != nil {
		return o.scores(dir)
	}
	return run.ValidationScores(dir)
}

// pairedSE returns the standard error of the reference's validation AUC
// minus the setting's, on a split of the test split's size, from their
// validation scores of each seed (DeLong's variance of the paired
// difference, metrics.DeLongPaired, scaled by the validation rows over
// the test rows: the variance of an AUC goes as one over the rows when
// the positive rate is the same; averaged over the seeds) and the seeds'
// costs from the same scores. refDir and setDir give a seed's run
// directories; ref and set the rows of the seeds (their ValAUC, the
// runs' own val_auc_selected, which the reloaded scores must give).
func (o *Options) pairedSE(seeds []uint64, refDir, setDir func(uint64) string, ref, set map[uint64]Row) (se float64, costs []float64, err error) {
	sum := 0.0
	for _, seed := range seeds {
		var sc [2]*run.ValScores
		for k, dir := range []string{refDir(seed), setDir(seed)} {
			if sc[k], err = o.valScores(dir); err != nil {
				return math.NaN(), nil, err
			}
		}
		if !slices.Equal(sc[0].IDs, sc[1].IDs) {
			return math.NaN(), nil, fmt.Errorf("seed %d: %s and %s scored other validation rows", seed, refDir(seed), setDir(seed))
		}
		p, err := metrics.DeLongPaired(sc[0].Scores, sc[1].Scores, sc[0].Labels)
		if err != nil {
			return math.NaN(), nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		for _, c := range []struct {
			dir       string
			got, want float64
		}{{refDir(seed), p.A, ref[seed].ValAUC}, {setDir(seed), p.B, set[seed].ValAUC}} {
			if !(math.Abs(c.got-c.want) <= 1e-9) {
				return math.NaN(), nil, fmt.Errorf("the validation scores reloaded from %s give AUC %.6f, the run recorded %.6f", c.dir, c.got, c.want)
			}
		}
		v := p.VarDiff
		if test := sc[0].TestRows; test > 0 {
			v *= float64(len(sc[0].IDs)) / float64(test)
		}
		sum += v
		costs = append(costs, p.A-p.B)
	}
	return math.Sqrt(sum / float64(len(seeds))), costs, nil
}

// setCostInterval fills the recommended row's cost interval
// (SeedFigures.CostPILo, CostPIHi, CostSE) from the validation scores of
// its runs and the reference's at the plan's seed and the confirmation
// seeds (reference: the reference's row of the plan's seed; conf:
// confirm.csv's rows); without a confirmation, or when the
// scores cannot be reloaded, the interval stays NaN and the log says why.
func (o *Options) setCostInterval(r *Row, reference Row, conf []Row) {
	f := &r.Seeds
	f.CostPILo, f.CostPIHi, f.CostSE = math.NaN(), math.NaN(), math.NaN()
	if f.N < 2 {
		return
	}
	ref, set := map[uint64]Row{}, map[uint64]Row{}
	seeds := []uint64{o.Base.Seed}
	ref[o.Base.Seed], set[o.Base.Seed] = reference, *r
	for _, c := range conf {
		if c.Seed <= o.Base.Seed || c.Seed > o.Base.Seed+uint64(o.confirmSeeds()) {
			continue
		}
		switch c.Key() {
		case Reference.Key():
			ref[c.Seed] = c
		case r.Key():
			set[c.Seed] = c
			seeds = append(seeds, c.Seed)
		}
	}
	slices.Sort(seeds)
	refDir := func(seed uint64) string {
		if seed == o.Base.Seed {
			return runDir(o.Out, Reference)
		}
		return confirmDir(o.Out, Reference, seed)
	}
	setDir := func(seed uint64) string {
		if seed == o.Base.Seed {
			return runDir(o.Out, r.Setting)
		}
		return confirmDir(o.Out, r.Setting, seed)
	}
	se, costs, err := o.pairedSE(seeds, refDir, setDir, ref, set)
	if err != nil {
		o.logger().Warn(fmt.Sprintf("no interval for a further seed's test cost of %s: %v", r.Legend, err))
		return
	}
	f.CostSE = se
	f.CostPILo, f.CostPIHi = costInterval(costs, se, CostLevel)
}
