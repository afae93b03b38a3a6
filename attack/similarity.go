package attack

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
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
	// Metric is the similarity (SimCosine by default); Centre subtracts
	// the batch's column means from every row first. Both are free
	// parameters of the tuned attacker (Params).
	Metric SimilarityMetric
	Centre bool

	norms   []float64
	known   []bool
	mean    []float64
	centred tensor.Matrix
}

// SimilarityMetric is how the similarity attack compares two rows.
type SimilarityMetric int

const (
	// SimCosine is cos(x_i, x_j) (0 with a zero vector).
	SimCosine SimilarityMetric = iota
	// SimInner is ⟨x_i, x_j⟩.
	SimInner
	// SimDistance is −‖x_i − x_j‖.
	SimDistance
)

// similarityMetrics names the metrics, in SimilarityMetric order.
var similarityMetrics = []string{"cosine", "inner", "distance"}

// Params implements Tunable: the metric and the centring.
func (a *Similarity) Params() []Param {
	return []Param{
		{Key: "metric", Help: "how rows are compared", Choices: similarityMetrics},
		{Key: "centre", Help: "subtract the batch's column means first", Choices: []string{"no", "yes"}},
	}
}

// SetParams implements Tunable.
func (a *Similarity) SetParams(v Values) error {
	if err := checkValues(a.Name(), a.Params(), v); err != nil {
		return err
	}
	a.Metric, a.Centre = SimilarityMetric(v["metric"]), v["centre"] == 1
	return nil
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
	x := obs.X
	if a.Centre {
		x = a.centre(x)
	}
	a.norms = buf.Grow(a.norms, n)
	if err := rowNorms(a.norms, x, a.Name(), obs.Layer); err != nil {
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
		xi := x.Row(i)
		for k, j := range known {
			c := a.similarity(xi, x.Row(j), a.norms[i], a.norms[j])
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

// similarity compares rows a and b of norms na and nb by the metric.
func (s *Similarity) similarity(a, b []float32, na, nb float64) float64 {
	switch s.Metric {
	case SimInner:
		return dot(a, b)
	case SimDistance:
		return -math.Sqrt(sqDist(a, b))
	}
	if na*nb == 0 {
		return 0
	}
	return dot(a, b) / (na * nb)
}

// centre returns x with its column means subtracted (a copy).
func (s *Similarity) centre(x *tensor.Matrix) *tensor.Matrix {
	n, d := x.Rows, x.Cols
	s.mean = buf.Grow(s.mean, d)
	clear(s.mean)
	for i := range n {
		for j, v := range x.Row(i) {
			s.mean[j] += float64(v)
		}
	}
	s.centred.Resize(n, d)
	for i := range n {
		dst := s.centred.Row(i)
		for j, v := range x.Row(i) {
			dst[j] = float32(float64(v) - s.mean[j]/float64(n))
		}
	}
	return &s.centred
}
