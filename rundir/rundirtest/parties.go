package rundirtest

import (
	"math/rand/v2"
	"testing"

	"github.com/splitguard/splitguard/audit"
	"github.com/splitguard/splitguard/config"
	"github.com/splitguard/splitguard/party/active"
	"github.com/splitguard/splitguard/rundir"
	"github.com/splitguard/splitguard/tensor"
	"github.com/splitguard/splitguard/transport/fanin"
)

// partySubsets gives rec an auditor for each passive party of names
// alone and for each colluding subset of two or more (smallest first, in
// the parties' order, as a run with several parties audits them) and
// returns the subsets' members (none with fewer than two names).
func partySubsets(t testing.TB, rec *rundir.Recorder, cfg *config.Config, names []string) [][]int {
	t.Helper()
	if len(names) < 2 {
		return nil
	}
	subsets := fanin.Coalitions(len(names))
	views, err := rundir.NewPartyAudits(names, subsets, func() (*audit.Auditor, error) {
		return audit.New(config.ExpandAttacks(cfg.Attacks), cfg.PositivesMinority, cfg.Seed)
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.SetParties(views)
	return subsets
}

// partyBatches draws one step's batch of each audited subset (nil without
// subsets) from the run's batch b: party k's gradients at every layer
// with the leak 0.5 + (leak−0.5)/(k+1), a subset's members' cut gradients
// side by side.
func partyBatches(rng *rand.Rand, b *audit.Batch, leak float64, parties int, subsets [][]int) []*audit.Batch {
	if len(subsets) == 0 {
		return nil
	}
	own := make([][]*tensor.Matrix, parties)
	for k := range own {
		own[k] = make([]*tensor.Matrix, len(b.Layers))
		for l := range own[k] {
			own[k][l] = gradients(rng, b.Labels, shift(0.5+(leak-0.5)/float64(k+1), l, len(b.Layers)))
		}
	}
	out := make([]*audit.Batch, len(subsets))
	for v, members := range subsets {
		layers, grads := b.Layers, own[members[0]]
		if len(members) > 1 {
			cut := len(b.Layers) - 1
			parts := make([]*tensor.Matrix, len(members))
			for i, k := range members {
				parts[i] = own[k][cut]
			}
			layers, grads = []string{"cut"}, []*tensor.Matrix{tensor.SideBySide(nil, parts...)}
		}
		out[v] = &audit.Batch{Step: b.Step, IDs: b.IDs, Labels: b.Labels, Layers: layers, Grads: grads,
			Clean: func() ([]*tensor.Matrix, error) { return grads, nil }}
	}
	return out
}

// partyEval gives the evaluation res a validation AUC (the test AUC) and
// each of the parties' validation AUC without it: the later a party is
// named, the less the model loses without it.
func partyEval(res *active.EvalResult, parties int) {
	res.ValRows, res.ValAUC, res.ValLoss = Rows, res.AUC, res.Loss
	res.ValAUCWithoutParty = make([]float64, parties)
	for k := range res.ValAUCWithoutParty {
		res.ValAUCWithoutParty[k] = res.AUC - 0.2/float64(k+1)
	}
}
