package attack

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/buf"
)

// SimilarityKnown is the number of known rows of the registered similarity
// attacks.
const SimilarityKnown = 10

func init() {
	Register("similarity_grad", func() Attack { return NewSimilarity(Gradient, SimilarityKnown) })
	Register("similarity_embed", func() Attack { return NewSimilarity(Embedding, SimilarityKnown) })
}

// Similarity is similarity-based label inference with known labels (as in
// SecretFlow's similarity attacks): the attacker knows the labels of k rows
// of the batch, of either class (Observation.Known and KnownLabels), and
// scores every other row by
//
//	r_i = mean_{j known positive} cos(x_i, x_j) − mean_{j known negative} cos(x_i, x_j)
//
// (a missing class's term is 0; the cosine with a zero vector is 0). x is
// the gradient at the layer or, for the embedding form, the layer's output
// (what the passive also computes at inference time). The known rows are
// not scored; with no known row no row is scored.
type Similarity struct {
	input Kind
	k     int
	norms []float64
	known []bool
}

// NewSimilarity returns the similarity attack on input with k ≥ 1 known
// rows; it panics on k < 1.
func NewSimilarity(input Kind, k int) *Similarity {
	if k < 1 {
		panic(fmt.Sprintf("attack: similarity attack with k=%d", k))
	}
	return &Similarity{input: input, k: k}
}

// Name implements Attack: "similarity_grad" or "similarity_embed".
func (a *Similarity) Name() string {
	if a.input == Embedding {
		return "similarity_embed"
	}
	return "similarity_grad"
}

// Needs implements Attack: the layer's matrix and k known rows.
func (a *Similarity) Needs() Needs { return Needs{Input: a.input, KnownRows: a.k} }

// Score implements Attack. It uses the first k known rows.
func (a *Similarity) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	if len(obs.Known) != len(obs.KnownLabels) {
		return fmt.Errorf("attack %s at layer %q: %d known rows but %d known labels", a.Name(), obs.Layer, len(obs.Known), len(obs.KnownLabels))
	}
	a.norms = buf.Grow(a.norms, n)
	if err := rowNorms(a.norms, obs.X, a.Name(), obs.Layer); err != nil {
		return err
	}
	a.known = buf.Grow(a.known, n)
	clear(a.known)
	known, labels := obs.Known, obs.KnownLabels
	if len(known) > a.k {
		known, labels = known[:a.k], labels[:a.k]
	}
	var nPos, nNeg int
	for k, j := range known {
		if j < 0 || j >= n {
			return fmt.Errorf("attack %s at layer %q: known row %d outside the batch of %d", a.Name(), obs.Layer, j, n)
		}
		if a.known[j] {
			return fmt.Errorf("attack %s at layer %q: known row %d given twice", a.Name(), obs.Layer, j)
		}
		a.known[j] = true
		switch labels[k] {
		case 1:
			nPos++
		case 0:
			nNeg++
		default:
			return fmt.Errorf("attack %s at layer %q: known label %d of row %d, want 0 or 1", a.Name(), obs.Layer, labels[k], j)
		}
	}
	for i := range n {
		if a.known[i] || len(known) == 0 {
			scored[i], scores[i] = false, 0
			continue
		}
		scored[i] = true
		var sp, sn float64
		xi := obs.X.Row(i)
		for k, j := range known {
			den := a.norms[i] * a.norms[j]
			if den == 0 {
				continue
			}
			c := dot(xi, obs.X.Row(j)) / den
			if labels[k] == 1 {
				sp += c
			} else {
				sn += c
			}
		}
		var s float64
		if nPos > 0 {
			s += sp / float64(nPos)
		}
		if nNeg > 0 {
			s -= sn / float64(nNeg)
		}
		if math.IsNaN(s) {
			return fmt.Errorf("attack %s at layer %q: NaN score at row %d", a.Name(), obs.Layer, i)
		}
		scores[i] = s
	}
	return nil
}
