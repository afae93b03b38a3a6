package attack

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register("norm", func() Attack { return &Norm{} })
	Register("cosine", func() Attack { return &Cosine{} })
	Register("majority_cosine", func() Attack { return &MajorityCosine{} })
}

// Norm is the norm attack (METHODS §3): r(g) = ‖g‖₂. Positives, predicted
// with less confidence, receive larger gradients.
type Norm struct{}

// Name implements Attack.
func (*Norm) Name() string { return "norm" }

// Needs implements Attack: the gradient alone.
func (*Norm) Needs() Needs { return Needs{Input: Gradient} }

// Rank implements [Ranked]: the papers' main attack comes first, and its
// cut-layer leak is the progress line's.
func (*Norm) Rank() int { return 1 }

// Score implements Attack; every row is scored.
func (a *Norm) Score(obs *Observation, scores []float64, scored []bool) error {
	if _, err := checkObs(a.Name(), obs, scores, scored); err != nil {
		return err
	}
	if err := rowNorms(scores, obs.X, a.Name(), obs.Layer); err != nil {
		return err
	}
	fill(scored, true)
	return nil
}

// Cosine is the oracle cosine attack (METHODS §3): r(g) = cos(g, g⁺) where
// g⁺ = Observation.Oracle is the clean gradient, at the same layer, of one
// positive of the batch. The cosine with a zero vector (a zero row, or a
// zero oracle) is defined as 0.
type Cosine struct {
	norms []float64
}

// Name implements Attack.
func (*Cosine) Name() string { return "cosine" }

// Needs implements Attack: the gradient and the oracle.
func (*Cosine) Needs() Needs { return Needs{Input: Gradient, Oracle: true} }

// Score implements Attack; every row is scored. It returns an error when
// the observation carries no oracle or one of the wrong length.
func (a *Cosine) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	if obs.Oracle == nil {
		return fmt.Errorf("attack cosine at layer %q: needs the oracle (Observation.Oracle: the clean gradient of one positive at this layer)", obs.Layer)
	}
	if len(obs.Oracle) != obs.X.Cols {
		return fmt.Errorf("attack cosine at layer %q: oracle has %d values, gradient rows have %d", obs.Layer, len(obs.Oracle), obs.X.Cols)
	}
	if err := checkFiniteSlice(a.Name(), obs.Layer, "oracle", obs.Oracle); err != nil {
		return err
	}
	a.norms = buf.Grow(a.norms, n)
	if err := rowNorms(a.norms, obs.X, a.Name(), obs.Layer); err != nil {
		return err
	}
	on := math.Sqrt(dot(obs.Oracle, obs.Oracle))
	for i := range n {
		den := a.norms[i] * on
		if den == 0 {
			scores[i] = 0
		} else {
			scores[i] = dot(obs.X.Row(i), obs.Oracle) / den
		}
	}
	fill(scored, true)
	return nil
}

// majorityBlock bounds the number of pairwise cosines MajorityCosine holds
// at once (4 MiB of float32), and majorityChunk the rows per chunk: only
// the blocks on and above the diagonal are multiplied, so smaller chunks
// skip more of the lower triangle (at B = 1024, 128-row chunks compute
// 56% of the full product).
const (
	majorityBlock = 1 << 20
	majorityChunk = 128
)

// MajorityCosine is the practical direction attack (METHODS §3): for each row
// i, share_i is the fraction of the other B−1 rows j ≠ i with
// cos(g_i, g_j) > τ (Threshold, 0 by default), and r = −share (the minority direction is the
// positive class). The cosine with a zero vector is 0, which is not
// positive: a zero row has share 0 and is not counted in any other row's
// share. With B = 1 the share is defined as 0.
//
// The pairwise cosines are the entries of N·Nᵀ with N the row-normalised
// batch, computed with tensor.MatMul over chunks of rows (bounded by
// 2²⁰ entries per chunk) and only on and above the diagonal block-wise,
// each positive entry counting for both of its rows.
type MajorityCosine struct {
	// Threshold τ counts a pair as agreeing when its cosine exceeds τ
	// (default 0); a free parameter of the tuned attacker (Params).
	Threshold float32

	norms      []float64
	counts     []int32
	normed     tensor.Matrix
	prod       tensor.Matrix
	chunk, rhs tensor.Matrix // views into normed
}

// Name implements Attack.
func (*MajorityCosine) Name() string { return "majority_cosine" }

// Params implements Tunable: the cosine threshold τ ∈ [−0.5, 0.5].
func (*MajorityCosine) Params() []Param {
	return []Param{{Key: "threshold", Help: "cosine above which two rows agree", Min: -0.5, Max: 0.5}}
}

// SetParams implements Tunable.
func (a *MajorityCosine) SetParams(v Values) error {
	if err := checkValues(a.Name(), a.Params(), v); err != nil {
		return err
	}
	a.Threshold = float32(v["threshold"])
	return nil
}

// Needs implements Attack: the gradient alone.
func (*MajorityCosine) Needs() Needs { return Needs{Input: Gradient} }

// Score implements Attack; every row is scored.
func (a *MajorityCosine) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	x := obs.X
	d := x.Cols
	a.norms = buf.Grow(a.norms, n)
	if err := rowNorms(a.norms, x, a.Name(), obs.Layer); err != nil {
		return err
	}
	a.normed.Resize(n, d)
	for i := range n {
		dst, src := a.normed.Row(i), x.Row(i)
		if a.norms[i] == 0 {
			clear(dst)
			continue
		}
		inv := 1 / a.norms[i]
		for j, v := range src {
			dst[j] = float32(float64(v) * inv)
		}
	}
	a.counts = buf.Grow(a.counts, n)
	clear(a.counts)
	step := max(1, min(n, majorityChunk, majorityBlock/max(n, 1)))
	for lo := 0; lo < n; lo += step {
		hi := min(n, lo+step)
		// chunk = rows [lo, hi), rhs = rows [lo, n): prod[r][c] is the
		// cosine of rows lo+r and lo+c.
		a.chunk = tensor.Matrix{Rows: hi - lo, Cols: d, Data: a.normed.Data[lo*d : hi*d]}
		a.rhs = tensor.Matrix{Rows: n - lo, Cols: d, Data: a.normed.Data[lo*d : n*d]}
		tensor.MatMul(&a.prod, &a.chunk, false, &a.rhs, true, 1, 0)
		w := n - lo
		for r := range hi - lo {
			// Entries right of the diagonal: pairs (lo+r, lo+cc), cc > r.
			row := a.prod.Data[r*w+r+1 : (r+1)*w]
			col := a.counts[lo+r+1 : n]
			col = col[:len(row)]
			var c int32
			for cc, v := range row {
				p := positive(v - a.Threshold)
				c += p
				col[cc] += p
			}
			a.counts[lo+r] += c
		}
	}
	for i := range n {
		if n > 1 {
			scores[i] = -float64(a.counts[i]) / float64(n-1)
		} else {
			scores[i] = 0
		}
	}
	fill(scored, true)
	return nil
}

// positive returns 1 when v > 0 and 0 otherwise, for finite v, without a
// branch (the signs of cosines are unpredictable): with b the IEEE bits,
// v > 0 exactly when b−1 < 0x7fffffff as unsigned integers.
func positive(v float32) int32 {
	x := uint64(math.Float32bits(v) - 1)
	return int32((x - 0x7fffffff) >> 63)
}
