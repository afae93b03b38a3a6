package protect

import (
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "max_norm_label", Color: 0xcc79a7, Rank: 4, Help: "max_norm applied to the positives only (needs labels)",
		New: func(Params) (Protector, error) { return &MaxNormLabel{stats: Stats{}}, nil }})
}

// MaxNormLabel is max_norm aligned to the least confident positive
// (Algorithm 5 of the technical report). Our reading of it: the
// per-example gradient is (p̃_i − y_i)·∇_e h(e_i), and the algorithm takes
// ‖∇_e h‖ as common to all rows, so a row's gradient norm is proportional
// to m_i = |y_i − p̃_i| (1 − p̃_i for a positive, p̃_i for a negative). With
// p_min the smallest predicted probability among the batch's positives,
// the target is T = 1 − p_min and every row gets
//
//	σ_i = sqrt(max(T²/m_i² − 1, 0)),   g̃_i = g_i·(1 + σ_i·ξ_i),  ξ_i ~ N(0, 1),
//
// one scalar per row, noise along g_i. For positives the ratio is ≥ 1 by
// construction (the listing has no max there); the max(·, 0) is applied
// to every row, which changes nothing for a batch's own T and keeps
// reused targets valid. The listing's indentation puts the noise lines in
// the negative branch only; the text ("for other positive instances …
// similarly") makes clear they apply to every row, as here. A row with
// m_i = 0 (a confident, exact prediction) has a zero gradient and stays
// as it is. It uses Probs and Labels only, never gradient norms.
//
// Batches without positives have no p_min: they use the target T of the
// most recent batch that had positives, so the noise does not reveal that
// the batch is all-negative. Before any batch with positives (start-up),
// the target is the batch's largest m_i, i.e. the alignment of max_norm in
// the label-free quantity |y − p̃|. Stats: target (T), one_class (1 when
// the fallback was used).
type MaxNormLabel struct {
	haveTarget bool
	target     float64
	stats      Stats
}

// Name returns "max_norm_label".
func (*MaxNormLabel) Name() string { return "max_norm_label" }

// Protect applies max_norm_label; it needs Labels and Probs.
func (p *MaxNormLabel) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("max_norm_label", b, out, true, true); err != nil {
		return nil, err
	}
	pmin, found := math.Inf(1), false
	for i, y := range b.Labels {
		if y == 1 {
			pmin, found = math.Min(pmin, float64(b.Probs[i])), true
		}
	}
	oneClass := 0.0
	switch {
	case found:
		p.target, p.haveTarget = 1-pmin, true
	case p.haveTarget:
		oneClass = 1
	default:
		oneClass = 1
		p.target = 0
		for i, y := range b.Labels {
			p.target = math.Max(p.target, math.Abs(float64(y)-float64(b.Probs[i])))
		}
		// Not remembered: a batch with positives sets the first real target.
	}
	t := p.target
	g := b.Grad
	for i := range g.Rows {
		m := math.Abs(float64(b.Labels[i]) - float64(b.Probs[i]))
		sigma := 0.0
		if m > 0 {
			sigma = math.Sqrt(math.Max(t*t/(m*m)-1, 0))
		}
		scaleRow(out.Row(i), g.Row(i), 1+sigma*rng.NormFloat64())
	}
	p.stats["target"] = t
	p.stats["one_class"] = oneClass
	return p.stats, nil
}

// MarshalBinary implements Stateful: the remembered target norm.
func (p *MaxNormLabel) MarshalBinary() ([]byte, error) {
	w := &stateWriter{}
	w.str(maxNormLabelStateTag)
	w.flag(p.haveTarget)
	w.f64(p.target)
	return w.b, nil
}

// UnmarshalBinary implements Stateful.
func (p *MaxNormLabel) UnmarshalBinary(data []byte) error {
	r := &stateReader{b: data, what: "max_norm_label"}
	r.tag(maxNormLabelStateTag)
	have := r.flag()
	t := r.f64()
	if err := r.done(); err != nil {
		return err
	}
	p.haveTarget, p.target = have, t
	return nil
}
