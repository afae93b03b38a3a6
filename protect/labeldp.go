package protect

import (
	"fmt"
	"math"
)

// labelDPStream separates LabelDP's keyed hash from every other consumer
// of the run seed.
const labelDPStream = 0x6c6162656c2d6470 // "label-dp"

// LabelDP is label differential privacy by randomized response (Ghazi et
// al.; with two classes, randomized response with prior reduces to this):
// each training label is kept with probability e^ε/(1+e^ε) and flipped
// otherwise. The draw is made once per example for the whole run — it is
// a keyed hash of (seed, example ID), so an example has the same noisy
// label in every epoch and whatever the batch order. Re-drawing every
// batch would spend the privacy budget again each epoch. The loss uses the
// noisy labels; evaluation uses the true ones.
type LabelDP struct {
	eps  float64
	keep float64
	key  uint64
}

func init() {
	Register(Spec{Name: "label_dp", Color: 0xd55e00, Rank: 7, Role: AddOn, Help: "label differential privacy by randomized response",
		Params:    []Param{{Key: "label_dp_eps", Symbol: "ε", Help: "label DP ε, randomized response with prior", Min: 0, MinOpen: true, Max: math.Inf(1)}},
		NewLabels: func(p Params, seed uint64) (LabelNoise, error) { return NewLabelDP(p.Get("label_dp_eps"), seed) }})
}

// NewLabelDP returns randomized response with privacy parameter ε > 0
// (+Inf keeps every label), keyed by seed.
func NewLabelDP(eps float64, seed uint64) (*LabelDP, error) {
	if !(eps > 0) {
		return nil, fmt.Errorf("protect: label DP epsilon %v, want > 0", eps)
	}
	return &LabelDP{eps: eps, keep: 1 / (1 + math.Exp(-eps)), key: splitmix64(seed ^ labelDPStream)}, nil
}

// KeepProb returns the probability e^ε/(1+e^ε) that a label is kept.
func (l *LabelDP) KeepProb() float64 { return l.keep }

// Keep reports whether the label of example id is kept (true) or flipped.
// It depends only on the seed and id.
func (l *LabelDP) Keep(id uint64) bool {
	h := splitmix64(l.key ^ splitmix64(id))
	return float64(h>>11)*(1.0/(1<<53)) < l.keep
}

// Apply writes the noisy label of every example into dst (resized to
// len(ids)) and returns it. Labels are 0 or 1; ids and labels must have
// the same length (a mismatch panics: it is a programming error).
func (l *LabelDP) Apply(ids []uint64, labels []uint8, dst []uint8) []uint8 {
	if len(ids) != len(labels) {
		panic(fmt.Sprintf("protect: LabelDP.Apply: %d ids for %d labels", len(ids), len(labels)))
	}
	if cap(dst) < len(ids) {
		dst = make([]uint8, len(ids))
	}
	dst = dst[:len(ids)]
	for i, id := range ids {
		y := labels[i]
		if !l.Keep(id) {
			y = 1 - y
		}
		dst[i] = y
	}
	return dst
}

// splitmix64 is the SplitMix64 finaliser, a bijective 64-bit mixer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
