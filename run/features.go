package run

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/attack/feature"
	"github.com/splitguard/splitguard/completion"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// streamFeatureAux is the PCG stream of the feature attacker's auxiliary
// rows.
const streamFeatureAux = 0xfea7a0c5

// auxRows draws n of rows training rows uniformly without replacement,
// by seed, in ascending order; fewer than n rows is an error.
func auxRows(rows, n int, seed uint64) ([]int, error) {
	if n > rows {
		return nil, fmt.Errorf("the feature attacker's %d auxiliary rows exceed the %d training rows (key feature_aux)", n, rows)
	}
	rng := rand.New(rand.NewPCG(seed, streamFeatureAux))
	perm := make([]int, rows)
	for i := range perm {
		perm[i] = i
	}
	for i := 0; i < n; i++ {
		j := i + rng.IntN(rows-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	out := perm[:n:n]
	slices.Sort(out)
	return out, nil
}

// featureAttacks returns what runs the configured feature attacks
// (package attack/feature) on the bottom at an evaluation: each fits on
// the cut embeddings and passive features of the auxiliary training rows
// (with the active party's own columns of those rows, when it has any)
// and reconstructs the test rows' passive features. Its figures are nil
// when none is configured.
func featureAttacks(cfg config.Config, pv, av *view, bottom model.Bottom) (func() (map[string]float64, error), error) {
	if len(cfg.FeatureAttacks) == 0 {
		return func() (map[string]float64, error) { return nil, nil }, nil
	}
	if pv.train.X == nil || pv.train.X.Image != nil {
		return nil, fmt.Errorf("feature attacks (key feature_attacks) reconstruct table columns; the data are images")
	}
	var atts []feature.Attack
	for _, n := range cfg.FeatureAttacks {
		a, err := feature.New(n)
		if err != nil {
			return nil, err
		}
		atts = append(atts, a)
	}
	rows, err := auxRows(len(pv.train.IDs), cfg.FeatureAuxRows(), cfg.Seed)
	if err != nil {
		return nil, err
	}
	in := &feature.Input{AuxTruth: data.SelectRows(pv.train, rows).X, Seed: cfg.Seed,
		AuxEmbed: &tensor.Matrix{}, EvalEmbed: &tensor.Matrix{}}
	if ax := av.train.X; ax != nil && ax.NumCat+ax.NumDense > 0 {
		in.AuxOwn, in.EvalOwn = data.SelectRows(av.train, rows).X, av.test.X
	}
	test := make([]int, len(pv.test.IDs))
	for i := range test {
		test[i] = i
	}
	chunk := cfg.EvalBatch
	if chunk <= 0 {
		chunk = 8192
	}
	var batch data.Batch
	return func() (map[string]float64, error) {
		if err := completion.Embed(bottom, pv.train.X, rows, chunk, &batch, in.AuxEmbed); err != nil {
			return nil, fmt.Errorf("feature attacks: auxiliary rows: %w", err)
		}
		if err := completion.Embed(bottom, pv.test.X, test, chunk, &batch, in.EvalEmbed); err != nil {
			return nil, fmt.Errorf("feature attacks: test rows: %w", err)
		}
		figs := map[string]float64{}
		for _, a := range atts {
			res, err := feature.Run(a, in, pv.test.X)
			if err != nil {
				return nil, err
			}
			res.Flatten(figs)
		}
		return figs, nil
	}, nil
}
