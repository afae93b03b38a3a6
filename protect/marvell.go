package protect

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/splitguard/splitguard/marvell"
	"github.com/splitguard/splitguard/tensor"
)

func init() {
	Register(Spec{Name: "marvell", Color: 0x0072b2, Rank: 5, Help: "Marvell: the optimal Gaussian noise for a power budget (or a leak target)",
		Params: []Param{
			{Key: "marvell_s", Symbol: "s", Help: "marvell: power bound P = s·‖Δ‖² (in target mode the starting s₀)", Min: 0, MinOpen: true, Max: math.Inf(1)},
			{Key: "marvell_error_bound", Symbol: "L", Help: "marvell target mode: error lower bound L", Min: 0, MinOpen: true, Max: 0.5, MaxOpen: true},
			{Key: "marvell_sumkl", Symbol: "τ", Help: "marvell target mode: sumKL target τ", Min: 0, MinOpen: true, Max: math.Inf(1)},
		},
		// The legend names the mode's own parameter, as the papers do.
		Describe: func(p Params) ([]string, float64) {
			for _, k := range []struct{ key, sym string }{{"marvell_error_bound", "L"}, {"marvell_sumkl", "τ"}, {"marvell_s", "s"}} {
				if p.Has(k.key) {
					v := p.Get(k.key)
					return []string{k.sym + "=" + strconv.FormatFloat(v, 'g', 4, 64)}, v
				}
			}
			return []string{"s=0"}, 0
		},
		New: newMarvell})
}

// marvellMaxTargetIters caps the P ← 1.5·P search of target mode:
// 1.5^200 ≈ 1e35 times the starting budget.
const marvellMaxTargetIters = 200

// Marvell is the optimised perturbation of METHODS §4. Per batch it estimates
// p = #pos/B, the class means ḡ¹, ḡ⁰, Δ = ḡ¹ − ḡ⁰, and the per-coordinate
// variances v (positives) and u (negatives); solves the Marvell problem
// (package marvell) with P = s·‖Δ‖², or in target mode grows P from
// s₀·‖Δ‖² by factors of 1.5 until sumKL* ≤ τ; and adds to a class-c row
//
//	ξ·sqrt(λ₁ᶜ − λ₂ᶜ)·Δ/‖Δ‖ + sqrt(λ₂ᶜ)·z,   ξ ~ N(0, 1), z ~ N(0, I_d).
//
// Every row consumes exactly 1 + d normal draws, whatever its class.
// When ‖Δ‖ = 0 the direction is the first coordinate axis (any unit vector
// gives the same covariance, which is then what matters). In target mode
// with ‖Δ‖² = 0 the search starts from s₀·d·max(u, v) instead.
//
// # Batches with one class
//
// Such a batch has no Δ. It is perturbed with the noise parameters of the
// most recent batch that had both classes — its λ's (absolute variances,
// so the noise has the same scale) and its unit direction Δ/‖Δ‖ — so the
// noise a class receives has the same distribution as in that batch, and
// the passive party cannot tell the batch apart. Its Stats repeat that
// batch's values (solve_ms 0) with one_class = 1.
//
// Start-up (no batch with both classes yet): the batch's own gradients
// stand in. The missing class mean is taken as 0 (per-example gradients of
// the two classes point in opposite directions, so this underestimates ‖Δ‖
// rather than inventing a direction), i.e. Δ = ±ḡ, with u = v = the
// batch's per-coordinate variance and p = ½; the problem is solved as
// usual (in the configured mode) and not remembered.
type Marvell struct {
	s         float64 // s, or s₀ in target mode
	target    float64 // τ; 0 outside target mode
	haveLast  bool
	last      marvell.Solution
	lastDir   []float64
	lastStats Stats

	mean0, mean1, dir []float64
	stats             Stats
}

func newMarvell(p Params) (Protector, error) {
	errBound, sumKL := p.Get("marvell_error_bound"), p.Get("marvell_sumkl")
	m := &Marvell{s: p.Get("marvell_s"), stats: Stats{}, lastStats: Stats{}}
	switch {
	case errBound != 0 && sumKL != 0:
		return nil, errors.New("both a Marvell error bound and a sumKL target are set; give one")
	case errBound != 0:
		m.target = marvell.TargetSumKL(errBound)
	case sumKL != 0:
		m.target = sumKL
	}
	if m.target > 0 {
		if m.s == 0 {
			m.s = 1
		}
	} else if m.s == 0 {
		return nil, errors.New("marvell needs s > 0 (P = s·‖Δ‖²), or a target error bound / sumKL")
	}
	return m, nil
}

// Name returns "marvell".
func (*Marvell) Name() string { return "marvell" }

// Protect applies Marvell; it needs Labels.
func (m *Marvell) Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error) {
	if err := checkBatch("marvell", b, out, true, false); err != nil {
		return nil, err
	}
	g := b.Grad
	d := g.Cols
	if m.haveLast && len(m.lastDir) != d {
		return nil, fmt.Errorf("protect: marvell: step %d: gradient width %d, earlier batches had %d", b.Step, d, len(m.lastDir))
	}
	if g.Rows == 0 {
		return m.stats, nil
	}
	n0, n1 := m.classSums(b)
	if d == 0 {
		return m.stats, nil
	}
	oneClass := n0 == 0 || n1 == 0
	if oneClass && m.haveLast {
		return m.reuseLast(b, out, rng), nil
	}
	m.classMeans(n0, n1)
	u, v, pos := m.variances(b, n0, n1)
	delta2 := m.direction()

	start := time.Now()
	pr, sol, iters, err := m.solve(marvell.Problem{U: u, V: v, D: d, G: delta2, Pos: pos, Power: m.s * delta2})
	if err != nil {
		return nil, fmt.Errorf("protect: marvell: step %d: %w", b.Step, err)
	}
	ms := float64(time.Since(start).Nanoseconds()) / 1e6
	st := m.record(pr, sol, iters, ms, oneClass)
	m.perturb(b, out, sol, rng)
	return st, nil
}

// classSums sums the gradient rows of each class into m.mean0 and m.mean1
// (sized to the gradient's width, cleared first) and returns the classes'
// counts.
func (m *Marvell) classSums(b *Batch) (n0, n1 int) {
	g, d := b.Grad, b.Grad.Cols
	m.mean0 = resize64(m.mean0, d)
	m.mean1 = resize64(m.mean1, d)
	m.dir = resize64(m.dir, d)
	for i, y := range b.Labels {
		acc := m.mean0
		if y == 1 {
			acc, n1 = m.mean1, n1+1
		}
		for k, v := range g.Row(i) {
			acc[k] += float64(v)
		}
	}
	return g.Rows - n1, n1
}

// reuseLast perturbs a batch of one class with the last valid batch's
// noise, in its direction, and returns that batch's figures.
func (m *Marvell) reuseLast(b *Batch, out *tensor.Matrix, rng *rand.Rand) Stats {
	copy(m.dir, m.lastDir)
	for k, v := range m.lastStats {
		m.stats[k] = v
	}
	m.stats["solve_ms"] = 0
	m.stats["one_class"] = 1
	m.perturb(b, out, m.last, rng)
	return m.stats
}

// classMeans turns the class sums into means; at start-up the missing
// class's mean is 0.
func (m *Marvell) classMeans(n0, n1 int) {
	for k := range m.mean0 {
		if n0 > 0 {
			m.mean0[k] /= float64(n0)
		}
		if n1 > 0 {
			m.mean1[k] /= float64(n1)
		}
	}
}

// variances returns the per-coordinate variance of the negatives' and the
// positives' gradients about their class means (u, v) and the positives'
// share pos; with one class only (start-up), one variance for both and p
// = ½.
func (m *Marvell) variances(b *Batch, n0, n1 int) (u, v, pos float64) {
	g, d := b.Grad, b.Grad.Cols
	for i, y := range b.Labels {
		mean := m.mean0
		if y == 1 {
			mean = m.mean1
		}
		var s float64
		for k, x := range g.Row(i) {
			e := float64(x) - mean[k]
			s += e * e
		}
		if y == 1 {
			v += s
		} else {
			u += s
		}
	}
	pos = float64(n1) / float64(g.Rows)
	switch {
	case n0 == 0 || n1 == 0: // start-up: one variance for both classes, p = ½
		u = (u + v) / (float64(d) * float64(g.Rows))
		v, pos = u, 0.5
	default:
		u /= float64(d) * float64(n0)
		v /= float64(d) * float64(n1)
	}
	return u, v, pos
}

// direction sets m.dir to the unit vector along Δ = mean₁ − mean₀ (the
// first axis when Δ = 0) and returns ‖Δ‖².
func (m *Marvell) direction() float64 {
	var delta2 float64
	for k := range m.dir {
		m.dir[k] = m.mean1[k] - m.mean0[k]
		delta2 += m.dir[k] * m.dir[k]
	}
	if delta2 > 0 {
		inv := 1 / math.Sqrt(delta2)
		for k := range m.dir {
			m.dir[k] *= inv
		}
	} else {
		clear(m.dir)
		m.dir[0] = 1
	}
	return delta2
}

// solve solves Marvell's problem pr; under a leak target it raises the
// power budget by half at a time (at most marvellMaxTargetIters times)
// until sumKL is at most the target. It returns the problem solved last
// and the raises.
func (m *Marvell) solve(pr marvell.Problem) (marvell.Problem, marvell.Solution, int, error) {
	sol, err := marvell.Solve(pr)
	iters := 0
	if err == nil && m.target > 0 {
		if pr.Power == 0 {
			pr.Power = m.s * float64(pr.D) * math.Max(pr.U, pr.V)
			sol, err = marvell.Solve(pr)
		}
		for err == nil && sol.SumKL > m.target && pr.Power > 0 && iters < marvellMaxTargetIters {
			pr.Power *= 1.5
			iters++
			sol, err = marvell.Solve(pr)
		}
	}
	return pr, sol, iters, err
}

// record writes the batch's figures into m.stats and, for a batch of both
// classes, remembers its noise, direction and figures for the batches of
// one class that follow.
func (m *Marvell) record(pr marvell.Problem, sol marvell.Solution, iters int, ms float64, oneClass bool) Stats {
	st := m.stats
	st["u"], st["v"], st["delta2"], st["P"] = pr.U, pr.V, pr.G, pr.Power
	st["lam10"], st["lam20"], st["lam11"], st["lam21"] = sol.Lam10, sol.Lam20, sol.Lam11, sol.Lam21
	st["sumKL_before"] = marvell.SumKLBefore(pr)
	st["sumKL"] = sol.SumKL
	st["error_lower_bound"] = marvell.ErrorLowerBound(sol.SumKL)
	st["auc_bound"] = marvell.AUCBound(sol.SumKL)
	st["solve_ms"] = ms
	st["one_class"] = 0
	if oneClass {
		st["one_class"] = 1
	}
	if m.target > 0 {
		st["target_iters"] = float64(iters)
	}
	if !oneClass {
		m.haveLast, m.last = true, sol
		m.lastDir = resize64(m.lastDir, len(m.dir))
		copy(m.lastDir, m.dir)
		for k, x := range st {
			m.lastStats[k] = x
		}
	}
	return st
}

// perturb writes g + noise into out, with the direction in m.dir.
func (m *Marvell) perturb(b *Batch, out *tensor.Matrix, sol marvell.Solution, rng *rand.Rand) {
	g := b.Grad
	a0, i0 := math.Sqrt(math.Max(sol.Lam10-sol.Lam20, 0)), math.Sqrt(sol.Lam20)
	a1, i1 := math.Sqrt(math.Max(sol.Lam11-sol.Lam21, 0)), math.Sqrt(sol.Lam21)
	for i, y := range b.Labels {
		along, iso := a0, i0
		if y == 1 {
			along, iso = a1, i1
		}
		c := along * rng.NormFloat64()
		src, dst := g.Row(i), out.Row(i)
		for k, x := range src {
			dst[k] = float32(float64(x) + c*m.dir[k] + iso*rng.NormFloat64())
		}
	}
}

// resize64 returns a zeroed slice of length n, reusing s's storage.
func resize64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// MarshalBinary implements Stateful: the last valid noise parameters, the
// direction of Δ they were computed for and their per-batch figures.
func (m *Marvell) MarshalBinary() ([]byte, error) {
	w := &stateWriter{}
	w.str(marvellStateTag)
	w.flag(m.haveLast)
	for _, v := range []float64{m.last.Lam10, m.last.Lam20, m.last.Lam11, m.last.Lam21, m.last.SumKL} {
		w.f64(v)
	}
	w.u32(len(m.lastDir))
	for _, v := range m.lastDir {
		w.f64(v)
	}
	writeStats(w, m.lastStats)
	return w.b, nil
}

// UnmarshalBinary implements Stateful.
func (m *Marvell) UnmarshalBinary(data []byte) error {
	r := &stateReader{b: data, what: "marvell"}
	r.tag(marvellStateTag)
	have := r.flag()
	var vals [5]float64
	for i := range vals {
		vals[i] = r.f64()
	}
	n := r.u32()
	if n > len(r.b)/8 {
		r.err = errShortState
	}
	var dir []float64
	for range n {
		if r.err != nil {
			break
		}
		dir = append(dir, r.f64())
	}
	stats := readStats(r)
	if err := r.done(); err != nil {
		return err
	}
	m.haveLast = have
	m.last.Lam10, m.last.Lam20, m.last.Lam11, m.last.Lam21, m.last.SumKL = vals[0], vals[1], vals[2], vals[3], vals[4]
	m.lastDir = dir
	m.lastStats = stats
	return nil
}
