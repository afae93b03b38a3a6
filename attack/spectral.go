package attack

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register("spectral", func() Attack { return &Spectral{} })
	Register("spectral_grad", func() Attack { return &Spectral{OnGradient: true} })
}

// Power-iteration settings of the spectral attack.
const (
	// spectralTol stops the iteration once ‖Cv − λv‖ ≤ spectralTol·λ
	// (C is formed in float32, so its entries carry ~1e-7 relative error
	// anyway).
	spectralTol = 1e-7
	// spectralMaxIter caps the iteration; reaching it means the top two
	// eigenvalues are nearly equal, and then any vector of their span is
	// as good a "top direction" as the exact one.
	spectralMaxIter = 1000
	// spectralStream is the PCG stream of the fixed start vector.
	spectralStream = 0x5bec
)

// Spectral is the spectral attack on a layer's forward output (METHODS §3,
// [Sun22] Algorithm 1): centre the batch, E = e − mean(e); take the top
// right singular vector v of E; s_i = ⟨E_i, v⟩; split s into two clusters
// by exact 1-D 2-means ([TwoMeans1D]); the positive cluster is the smaller
// one when Observation.PositivesMinority is set (on equal sizes, and
// otherwise, the one with the larger mean |s|); the score is s, negated
// when the positive cluster is the low one, so that the positive cluster
// scores higher.
//
// v is found by power iteration on the d×d matrix C = EᵀE (one
// tensor.MatMul), started from C·w for a fixed pseudo-random w and
// stopped when ‖Cv − λv‖ ≤ 1e-7·λ (at most 1000 steps); when the batch has
// fewer rows than columns it iterates on the n×n matrix EEᵀ instead and
// maps its top eigenvector u to v = Eᵀu/‖Eᵀu‖. A constant batch (C = 0)
// scores every row 0 (AUC ½), as does a batch of one row.
//
// With OnGradient (registered as "spectral_grad", SecretFlow's grad_lia)
// the same procedure runs on the gradient the passive holds at the layer:
// positive and negative gradients point in opposite directions, so the top
// direction of the centred batch separates them.
type Spectral struct {
	// OnGradient makes the attack read the layer's gradient instead of
	// its output.
	OnGradient bool
	// Standardise divides every centred column by its standard deviation
	// before the direction is found (a constant column stays 0); a free
	// parameter of the tuned attacker (Params).
	Standardise bool
	// Components is the number of top directions the rows are projected
	// on (1 to 3; 0 or 1: the top one, the paper's attack); a free
	// parameter of the tuned attacker (Params).
	Components int

	dirs, ew, w2, w3, proj []float64 // spectral_components.go
	cluster                []bool

	centred tensor.Matrix
	cov     tensor.Matrix
	c64     []float64
	v       []float64 // the top direction (length d)
	q, u, w []float64 // power-iteration vectors (length min(n, d))
	mean    []float64
	s       []float64
	sorted  []float64
	// Iterations is the number of power-iteration steps of the last Score
	// call, for diagnostics.
	Iterations int
}

// Name implements Attack.
func (a *Spectral) Name() string {
	if a.OnGradient {
		return "spectral_grad"
	}
	return "spectral"
}

// Params implements Tunable: the standardisation of the columns.
func (a *Spectral) Params() []Param {
	return []Param{
		{Key: "standardise", Help: "scale every column to unit deviation", Choices: []string{"no", "yes"}},
		{Key: "components", Help: "top directions the rows are projected on", Min: 1, Max: spectralComponentsMax, Int: true, Default: 1},
	}
}

// SetParams implements Tunable.
func (a *Spectral) SetParams(v Values) error {
	if err := checkValues(a.Name(), a.Params(), v); err != nil {
		return err
	}
	a.Standardise, a.Components = v["standardise"] == 1, int(v["components"])
	return nil
}

// Needs implements Attack: the layer output (or gradient) alone.
func (a *Spectral) Needs() Needs {
	if a.OnGradient {
		return Needs{Input: Gradient}
	}
	return Needs{Input: Embedding}
}

// Score implements Attack; every row is scored.
func (a *Spectral) Score(obs *Observation, scores []float64, scored []bool) error {
	n, err := checkObs(a.Name(), obs, scores, scored)
	if err != nil {
		return err
	}
	x := obs.X
	what := "embedding"
	if a.OnGradient {
		what = "gradient"
	}
	if err := checkFinite(a.Name(), obs.Layer, what, x); err != nil {
		return err
	}
	fill(scored, true)
	a.Iterations = 0
	if n == 0 {
		return nil
	}
	a.topDirection(x)
	v := a.v
	for i := range n {
		var s float64
		for j, e := range a.centred.Row(i) {
			s += float64(e) * v[j]
		}
		a.s[i] = s
	}
	a.sorted = buf.Grow(a.sorted, n)
	copy(a.sorted, a.s[:n])
	slices.Sort(a.sorted)
	m, ok := TwoMeans1D(a.sorted)
	if !ok {
		fill(scores, 0)
		return nil
	}
	if a.Components > 1 {
		a.components(n, obs.PositivesMinority, scores)
		return nil
	}
	var absLo, absHi float64
	for _, s := range a.sorted[:m] {
		absLo += math.Abs(s)
	}
	for _, s := range a.sorted[m:] {
		absHi += math.Abs(s)
	}
	nLo, nHi := m, n-m
	var positiveHigh bool
	switch {
	case obs.PositivesMinority && nHi < nLo:
		positiveHigh = true
	case obs.PositivesMinority && nLo < nHi:
		positiveHigh = false
	default:
		positiveHigh = absHi/float64(nHi) >= absLo/float64(nLo)
	}
	for i := range n {
		if positiveHigh {
			scores[i] = a.s[i]
		} else {
			scores[i] = -a.s[i]
		}
	}
	return nil
}

// topDirection centres x into a.centred, sets a.s to length n and a.v to
// the top right singular vector of the centred matrix E (all zero when it
// is 0).
//
// The power iteration runs on the smaller of the two Gram matrices:
// C = EᵀE (d×d) when n ≥ d, else K = EEᵀ (n×n), whose top eigenvector u
// gives v = Eᵀu/‖Eᵀu‖. Both have the same non-zero eigenvalues, so the
// stopping rule means the same; the image models' cut embeddings (d in the
// thousands, batch 128) would otherwise cost d² per step.
func (a *Spectral) topDirection(x *tensor.Matrix) {
	n, d := x.Rows, x.Cols
	a.mean = buf.Grow(a.mean, d)
	clear(a.mean)
	for i := range n {
		for j, v := range x.Row(i) {
			a.mean[j] += float64(v)
		}
	}
	for j := range a.mean {
		a.mean[j] /= float64(n)
	}
	a.centred.Resize(n, d)
	for i := range n {
		src, dst := x.Row(i), a.centred.Row(i)
		for j, v := range src {
			dst[j] = float32(float64(v) - a.mean[j])
		}
	}
	if a.Standardise {
		a.standardise(n, d)
	}
	a.s = buf.Grow(a.s, n)
	a.v = buf.Grow(a.v, d)
	dual := n < d
	m := d
	if dual {
		m = n
		tensor.MatMul(&a.cov, &a.centred, false, &a.centred, true, 1, 0)
	} else {
		tensor.MatMul(&a.cov, &a.centred, true, &a.centred, false, 1, 0)
	}
	a.q = buf.Grow(a.q, m)
	a.u = buf.Grow(a.u, m)
	a.c64 = buf.Grow(a.c64, m*m)
	for k, c := range a.cov.Data {
		a.c64[k] = float64(c)
	}
	if len(a.w) != m {
		a.w = buf.Grow(a.w, m)
		r := rand.New(rand.NewPCG(uint64(m), spectralStream))
		for j := range a.w {
			a.w[j] = r.NormFloat64()
		}
	}
	defer func() {
		if !dual {
			copy(a.v, a.q)
			return
		}
		// v = Eᵀu / ‖Eᵀu‖.
		clear(a.v)
		for i := range n {
			ui := a.q[i]
			for j, e := range a.centred.Row(i) {
				a.v[j] += ui * float64(e)
			}
		}
		if normalise(a.v) == 0 {
			clear(a.v)
		}
	}()
	symMatVec(a.q, a.c64, a.w)
	if normalise(a.q) == 0 {
		clear(a.q)
		return
	}
	for a.Iterations = 1; a.Iterations <= spectralMaxIter; a.Iterations++ {
		symMatVec(a.u, a.c64, a.q)
		var lambda float64
		for j := range m {
			lambda += a.u[j] * a.q[j]
		}
		var res float64
		for j := range m {
			r := a.u[j] - lambda*a.q[j]
			res += r * r
		}
		nu := normalise(a.u)
		if nu == 0 {
			// q lies in the null space: there is no direction left to find.
			return
		}
		a.q, a.u = a.u, a.q
		if math.Sqrt(res) <= spectralTol*lambda {
			return
		}
	}
}

// symMatVec sets dst = C·v for the d×d row-major c (four independent
// accumulators, so that the additions overlap).
func symMatVec(dst, c, v []float64) {
	d := len(v)
	for i := range d {
		row := c[i*d : (i+1)*d]
		var s0, s1, s2, s3 float64
		j := 0
		for ; j+4 <= d; j += 4 {
			s0 += row[j] * v[j]
			s1 += row[j+1] * v[j+1]
			s2 += row[j+2] * v[j+2]
			s3 += row[j+3] * v[j+3]
		}
		for ; j < d; j++ {
			s0 += row[j] * v[j]
		}
		dst[i] = (s0 + s1) + (s2 + s3)
	}
}

// normalise scales v to unit length and returns its former length (v is
// left unchanged when that is 0).
func normalise(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	s = math.Sqrt(s)
	if s == 0 {
		return 0
	}
	for i := range v {
		v[i] /= s
	}
	return s
}

// TwoMeans1D is the exact 1-D 2-means of the ascending values sorted: it
// returns m such that {sorted[:m]} and {sorted[m:]} is a split with the
// smallest within-cluster sum of squares Σ(x − mean of x's cluster)².
// Optimal 1-D clusters are intervals, so scanning every split point of
// the sorted values finds the optimum; equal values are never separated
// (only splits with sorted[m−1] < sorted[m] are considered) and the
// smallest optimal m wins a tie. ok is false when no split exists (fewer
// than two distinct values). It runs in O(n) and allocates nothing.
func TwoMeans1D(sorted []float64) (m int, ok bool) {
	n := len(sorted)
	var total float64
	for _, x := range sorted {
		total += x
	}
	// Within SS = Σx² − S_L²/m − S_R²/(n−m): maximise the subtracted part.
	// Shift by the mean first so the prefix sums stay small.
	mu := total / float64(n)
	var shifted float64
	for _, x := range sorted {
		shifted += x - mu
	}
	best := math.Inf(-1)
	var left float64
	for k := 1; k < n; k++ {
		left += sorted[k-1] - mu
		if !(sorted[k-1] < sorted[k]) {
			continue
		}
		right := shifted - left
		between := left*left/float64(k) + right*right/float64(n-k)
		if between > best {
			best, m, ok = between, k, true
		}
	}
	return m, ok
}

// standardise divides every column of a.centred by its standard deviation
// (a zero column is left zero).
func (a *Spectral) standardise(n, d int) {
	a.mean = buf.Grow(a.mean, d) // reused for the inverse deviations
	clear(a.mean)
	for i := range n {
		for j, v := range a.centred.Row(i) {
			a.mean[j] += float64(v) * float64(v)
		}
	}
	for j, ss := range a.mean {
		if ss > 0 {
			a.mean[j] = 1 / math.Sqrt(ss/float64(n))
		}
	}
	for i := range n {
		row := a.centred.Row(i)
		for j, v := range row {
			row[j] = float32(float64(v) * a.mean[j])
		}
	}
}
