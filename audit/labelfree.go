package audit

import (
	"fmt"
	"slices"

	"github.com/splitguard/splitguard/attack"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/tensor"
)

// LabelFree is the auditor's label-free mode: what a party holding no
// label (the passive party's red team) can run on what it receives and
// computes. It reads the same attack list as the [Auditor], expanded by
// the one rule ([attack.Expand]), and keeps every attack that needs no
// label (attack.Needs.LabelFree): the per-batch attacks and the epoch
// attacks. The attacks that need labels (an oracle, hints, known rows, or
// a model attack's known labels) are left out and named by [LabelFree.LeftOut].
// Without labels there is no AUC: each attack's scores are summarised by
// their quantiles and a 1-D 2-means split ([Summarise]).
type LabelFree struct {
	batch    []attack.Attack
	epoch    []attack.EpochAttack
	names    []string
	leftOut  []string
	minority bool
	memory   *attack.Memory // nil unless a label-free epoch attack is on

	scores    []float64
	scored    []bool
	memScores []float64
	sum       summariser
}

// ScoreSummary is one attack's label-free summary of one batch (or one
// epoch's memory) at one layer.
type ScoreSummary struct {
	Q05 float64 `json:"q05"`
	Q50 float64 `json:"q50"`
	Q95 float64 `json:"q95"`
	// Flagged is the share of the rows in the high-score cluster: the share
	// the attack flags as positive.
	Flagged float64 `json:"flagged"`
	// Clusters are the sizes of the low- and high-score clusters.
	Clusters [2]int `json:"clusters"`
}

// NewLabelFree returns the label-free auditor of the named attacks ("all"
// expands as for the [Auditor]). positivesMinority is the spectral
// attacker's prior. It fails when no named attack is label-free.
func NewLabelFree(names []string, positivesMinority bool) (*LabelFree, error) {
	a := &LabelFree{minority: positivesMinority}
	for _, n := range attack.Expand(names) {
		p, err := attack.NewPlugin(n)
		if err != nil {
			return nil, err
		}
		if !p.Needs().LabelFree() {
			a.leftOut = append(a.leftOut, n)
			continue
		}
		switch at := p.(type) {
		case attack.EpochAttack:
			if a.memory == nil {
				a.memory = attack.NewMemory()
			}
			a.epoch = append(a.epoch, at)
		case attack.Attack:
			a.batch = append(a.batch, at)
		default:
			return nil, fmt.Errorf("attack %s is neither a per-batch nor an epoch attack", n)
		}
		a.names = append(a.names, n)
	}
	if len(a.names) == 0 {
		return nil, fmt.Errorf("no label-free attack among %v (label-free: %v)", names, LabelFreeAttacks())
	}
	return a, nil
}

// LabelFreeAttacks lists the registered attacks a party without labels
// can run (attack.Needs.LabelFree), per batch or at the end of an epoch.
func LabelFreeAttacks() []string {
	var out []string
	for _, n := range attack.Names() {
		if needs, err := attack.Describe(n); err == nil && needs.LabelFree() {
			out = append(out, n)
		}
	}
	return out
}

// Attacks names the attacks the label-free auditor runs, in the order of
// the expanded list.
func (a *LabelFree) Attacks() []string { return a.names }

// LeftOut names the attacks of the expanded list that need labels, which
// the label-free auditor leaves out.
func (a *LabelFree) LeftOut() []string { return a.leftOut }

// HasEpochMemory reports whether an epoch attack is on ([LabelFree.EndEpoch]).
func (a *LabelFree) HasEpochMemory() bool { return a.memory != nil }

// Forget empties the epoch memory (after a resume the epoch's earlier
// batches are not seen again).
func (a *LabelFree) Forget() {
	if a.memory != nil {
		a.memory = attack.NewMemory()
	}
}

// Observe runs the per-batch attacks at every layer of b and adds b's
// gradients to the epoch memory. b.Labels and b.Clean are not read. It
// writes each attack's summary into dst, keyed "ATTACK/LAYER".
func (a *LabelFree) Observe(b *Batch, dst map[string]ScoreSummary) error {
	n := len(b.IDs)
	a.scores = buf.Grow(a.scores, n)
	a.scored = buf.Grow(a.scored, n)
	for l, layer := range b.Layers {
		grad, out := layerOf(b.Grads, l), layerOf(b.Outputs, l)
		if a.memory != nil && memoryLayers[layer] && grad != nil {
			if err := a.memory.Observe(layer, b.IDs, grad, nil); err != nil {
				return fmt.Errorf("step %d: %w", b.Step, err)
			}
		}
		for _, at := range a.batch {
			ob := &attack.Observation{Layer: layer, X: grad, PositivesMinority: a.minority}
			if at.Needs().Input == attack.Embedding {
				ob.X = out
			}
			if at.Needs().WithOutput {
				ob.Output = out // e.g. grad_match's surrogate top
			}
			if ob.X == nil {
				continue
			}
			for i := range a.scored {
				a.scored[i] = true
			}
			if err := at.Score(ob, a.scores, a.scored); err != nil {
				return fmt.Errorf("step %d: %s at %s: %w", b.Step, at.Name(), layer, err)
			}
			dst[metrics.Key(at.Name(), layer)] = a.sum.of(a.scores, a.scored)
		}
	}
	return nil
}

// EndEpoch scores the epoch attacks over every example remembered so far
// and writes their summaries into dst, keyed "ATTACK/LAYER"; it does
// nothing without an epoch attack.
func (a *LabelFree) EndEpoch(dst map[string]ScoreSummary) error {
	if a.memory == nil {
		return nil
	}
	for _, layer := range a.memory.Layers() {
		for _, at := range a.epoch {
			scores, err := at.ScoreEpoch(a.memory, layer, a.memScores)
			if err != nil {
				return fmt.Errorf("%s at layer %s: %w", at.Name(), layer, err)
			}
			if scores == nil {
				continue
			}
			a.memScores = scores
			dst[metrics.Key(at.Name(), layer)] = a.sum.of(scores, nil)
		}
	}
	return nil
}

// layerOf returns ms[l], or nil past its end.
func layerOf(ms []*tensor.Matrix, l int) *tensor.Matrix {
	if l < len(ms) {
		return ms[l]
	}
	return nil
}

// Summarise returns the quantiles of the scores s and their 1-D 2-means
// split: the split of the sorted scores minimising the within-cluster sum
// of squares (ties stay in one cluster). It sorts s.
func Summarise(s []float64) ScoreSummary {
	var sum summariser
	return sum.sorted(s)
}

// summariser keeps the scratch of the summaries between batches.
type summariser struct {
	kept, prefix, prefix2 []float64
}

// of summarises the scores with scored set (all when scored is nil).
func (m *summariser) of(scores []float64, scored []bool) ScoreSummary {
	m.kept = m.kept[:0]
	for i, v := range scores {
		if scored == nil || scored[i] {
			m.kept = append(m.kept, v)
		}
	}
	return m.sorted(m.kept)
}

func (m *summariser) sorted(s []float64) ScoreSummary {
	var out ScoreSummary
	if len(s) == 0 {
		return out
	}
	slices.Sort(s)
	out.Q05, _ = metrics.QuantileSorted(s, 0.05)
	out.Q50, _ = metrics.QuantileSorted(s, 0.5)
	out.Q95, _ = metrics.QuantileSorted(s, 0.95)
	n := len(s)
	m.prefix = buf.Grow(m.prefix, n+1)
	m.prefix2 = buf.Grow(m.prefix2, n+1)
	prefix, prefix2 := m.prefix, m.prefix2
	prefix[0], prefix2[0] = 0, 0
	for i, v := range s {
		prefix[i+1] = prefix[i] + v
		prefix2[i+1] = prefix2[i] + v*v
	}
	sse := func(a, b int) float64 { // over s[a:b]
		m := float64(b - a)
		sum := prefix[b] - prefix[a]
		return prefix2[b] - prefix2[a] - sum*sum/m
	}
	best, cut := -1.0, n
	for k := 1; k < n; k++ {
		if s[k] == s[k-1] {
			continue
		}
		if v := sse(0, k) + sse(k, n); best < 0 || v < best {
			best, cut = v, k
		}
	}
	out.Clusters = [2]int{cut, n - cut}
	out.Flagged = float64(n-cut) / float64(n)
	return out
}
