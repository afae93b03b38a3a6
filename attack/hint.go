package attack

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/internal/buf"
)

// HintScoring says how a hint attack compares a row with the hints.
type HintScoring int

const (
	// HintDistance scores −min_j ‖g_i − h_j‖.
	HintDistance HintScoring = iota
	// HintInner scores ⟨g_i, h*⟩ with h* the hint of largest norm (the
	// first such hint on a tie).
	HintInner
	// HintCosine scores max_j cos(g_i, h_j); the cosine with a zero
	// vector is 0.
	HintCosine
)

// String returns the scoring's name suffix: "distance", "inner" or
// "cosine".
func (s HintScoring) String() string {
	switch s {
	case HintDistance:
		return "distance"
	case HintInner:
		return "inner"
	case HintCosine:
		return "cosine"
	}
	return fmt.Sprintf("HintScoring(%d)", int(s))
}

// HintCounts are the numbers of hints the registered hint attacks use.
var HintCounts = [...]int{1, 3, 5}

func init() {
	for _, k := range HintCounts {
		for _, s := range []HintScoring{HintDistance, HintInner, HintCosine} {
			Register(HintName(k, s), func() Attack { return NewHint(k, s) })
		}
	}
}

// HintName returns the registered name of the hint attack with k hints
// and the given scoring, e.g. "hint5_inner".
func HintName(k int, s HintScoring) string { return fmt.Sprintf("hint%d_%s", k, s) }

// Hint is the hint attack of [Li22]'s appendix (METHODS §3): the attacker knows k
// positive rows of the batch (the first k of Observation.Hints) and scores
// every other row by its closeness to them. The hint rows themselves are
// not scored (scored[i] = false): scoring them, as the authors' code did,
// inflates the AUC. With fewer than k hints it uses those there are; with
// none it scores no row (the batch then has no AUC).
type Hint struct {
	k       int
	scoring HintScoring
	name    string
	hNorms  []float64
	// use is how many of the k hints are compared with (1 ≤ use ≤ k; 0:
	// k), a free parameter of the tuned attacker (Params); every one of
	// the k hints is left unscored.
	use int
}

// Params implements Tunable: how many of its k hints the attack compares
// rows with (the k of the hint attack; the others stay unscored).
func (a *Hint) Params() []Param {
	return []Param{{Key: "hints", Help: "hints compared with", Min: 1, Max: float64(a.k), Int: true, Default: float64(a.k)}}
}

// SetParams implements Tunable.
func (a *Hint) SetParams(v Values) error {
	if err := checkValues(a.name, a.Params(), v); err != nil {
		return err
	}
	a.use = int(v["hints"])
	return nil
}

// NewHint returns the hint attack with k ≥ 1 hints and the given scoring.
// It panics on k < 1 or an unknown scoring.
func NewHint(k int, s HintScoring) *Hint {
	if k < 1 || s < HintDistance || s > HintCosine {
		panic(fmt.Sprintf("attack: hint attack with k=%d and scoring %v", k, s))
	}
	return &Hint{k: k, scoring: s, name: HintName(k, s)}
}

// Name implements Attack.
func (a *Hint) Name() string { return a.name }

// Needs implements Attack: the gradient and k hints.
func (a *Hint) Needs() Needs { return Needs{Input: Gradient, Hints: a.k} }

// K returns the number of hints the attack uses.
func (a *Hint) K() int { return a.k }

// Score implements Attack. It returns an error when a hint is not a row
// of the batch.
func (a *Hint) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.name, obs, scores, scored)
	if err != nil {
		return err
	}
	x := obs.X
	hints := obs.Hints[:min(a.k, len(obs.Hints))]
	for _, h := range hints {
		if h < 0 || h >= n {
			return fmt.Errorf("attack %s at layer %q: hint row %d outside the batch of %d rows", a.name, obs.Layer, h, n)
		}
	}
	if len(hints) == 0 {
		fill(scored, false)
		fill(scores, 0)
		return nil
	}
	a.hNorms = buf.Grow(a.hNorms, len(hints))
	best := 0
	for j, h := range hints {
		a.hNorms[j] = math.Sqrt(dot(x.Row(h), x.Row(h)))
		if a.hNorms[j] > a.hNorms[best] {
			best = j
		}
	}
	for j, nh := range a.hNorms {
		if math.IsNaN(nh) || math.IsInf(nh, 0) {
			return notFinite(a.name, obs.Layer, x, hints[j])
		}
	}
	fill(scored, true)
	for _, h := range hints {
		scored[h] = false
	}
	if a.use > 0 && a.use < len(hints) {
		hints = hints[:a.use]
		best = 0
		for j := range hints {
			if a.hNorms[j] > a.hNorms[best] {
				best = j
			}
		}
	}
	for i := range n {
		if !scored[i] {
			scores[i] = 0
			continue
		}
		g := x.Row(i)
		var s float64
		switch a.scoring {
		case HintDistance:
			m := math.Inf(1)
			for _, h := range hints {
				m = min(m, sqDist(g, x.Row(h)))
			}
			s = -math.Sqrt(m)
		case HintInner:
			s = dot(g, x.Row(hints[best]))
		case HintCosine:
			ng := math.Sqrt(dot(g, g))
			s = math.Inf(-1)
			for j, h := range hints {
				c := 0.0
				if den := ng * a.hNorms[j]; den != 0 {
					c = dot(g, x.Row(h)) / den
				}
				s = max(s, c)
			}
		}
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return notFinite(a.name, obs.Layer, x, i)
		}
		scores[i] = s
	}
	return nil
}

// PickHints chooses min(k, #positives) distinct positive rows
// (labels[i] != 0) uniformly at random and returns them in a uniformly
// random order, appended to dst[:0]. Because the order is random too,
// every prefix is itself a uniform sample: pick once with the largest k
// and let each hint attack use its first k. With fewer than k positives
// every positive is returned. It draws from rng only, so the hints are
// deterministic for a seed, and allocates nothing when cap(dst) ≥ k.
func PickHints(labels []uint8, k int, rng *rand.Rand, dst []int) []int {
	dst = dst[:0]
	if k <= 0 {
		return dst
	}
	seen := 0
	// Reservoir sampling: a uniform k-subset of the positives.
	for i, y := range labels {
		if y == 0 {
			continue
		}
		seen++
		if len(dst) < k {
			dst = append(dst, i)
		} else if j := rng.IntN(seen); j < k {
			dst[j] = i
		}
	}
	// The reservoir's slot order is not uniform; shuffle it.
	rng.Shuffle(len(dst), func(i, j int) { dst[i], dst[j] = dst[j], dst[i] })
	return dst
}
