package protect

import (
	"fmt"
	"math"
	"sync"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

// dcorFloor is the smallest dCor whose logarithm the loss takes; below it
// (the sample dCov²(e, y) is 0 up to rounding) the loss is α·log(dcorFloor)
// and the gradient 0.
const dcorFloor = 1e-12

// Blocking of the O(n²) work: the rows are cut into blocks of dcorBlock,
// and the distance pass walks each block row in tiles of dcorTile columns,
// so that a tile of the Gram matrix is turned into distances while it is
// still in cache (256×512 float32 = 512 KB).
const (
	dcorBlock = 256
	dcorTile  = 512
	// dcorWorkers is the number of goroutines of the O(n²) passes.
	dcorWorkers = 2
)

// DCor is the distance-correlation defence of METHODS §4 ([Sun22] §7): the
// extra loss α·log dCor(e, y) per batch, with
//
//	dCor = dCov²(e, y) / sqrt(dCov²(e, e)·dCov²(y, y)),
//
// the V-statistics of Székely et al. from the double-centred pairwise
// distance matrices A (of the embedding rows, Euclidean) and B (of the
// labels, |y_i − y_j|): dCov²(x, z) = (1/n²)·Σ_ij X_ij Z_ij.
//
// # Binary labels in closed form
//
// The labels are 0/1 (the loss labels, possibly flipped by label DP, are
// never anything else; other values are an error). With p the share of
// ones and z_i = y_i − p, the double-centred label matrix is rank one,
// B_ij = −2·z_i·z_j, so dCov²(y, y) = 4p²(1−p)², and, because double
// centring is linear and idempotent (Σ A_ij B_ij = Σ a_ij B_ij),
//
//	dCov²(e, y) = −(2/n²)·Σ_i z_i·(R¹_i − p·R_i),
//	dCov²(e, e) = (1/n²)·(Σ_ij a_ij² − (2/n)·Σ_i R_i² + (Σ_i R_i)²/n²),
//
// where a_ij = ‖e_i − e_j‖, R_i = Σ_j a_ij and R¹_i = Σ_{j: y_j = 1} a_ij.
// One pass over the distances therefore gives the loss.
//
// # Gradient
//
// ∂dCov²(e,e)/∂a_ij = 2A_ij/n² and ∂dCov²(e,y)/∂a_ij = B_ij/n², so with
// a_ij = ‖e_i − e_j‖ and both (i, j) and (j, i) counted,
//
//	∂(α log dCor)/∂e_i = Σ_j M_ij (e_i − e_j) = (Σ_j M_ij)·e_i − (M·E)_i,
//	M_ij = (k_y·B_ij − k_e·A_ij) / a_ij = (w_i·z_j + u_i + u_j − k_e·a_ij) / a_ij,
//
// with k_y = 2α/(n²·dCov²(e,y)), k_e = 2α/(n²·dCov²(e,e)), w_i = −2k_y·z_i
// and u_i = k_e·(R_i/n − m/2), m = Σ_i R_i/n² (M_ij = 0 when a_ij = 0: the
// gradient of a distance at 0 is taken as 0, and M_ii = 0).
//
// # Cost and memory
//
// Distances come from E·Eᵀ (‖e_i‖² + ‖e_j‖² − 2⟨e_i, e_j⟩ in float64,
// clamped at 0; values below the float32 rounding of that expression,
// 4·ε₃₂·(‖e_i‖² + ‖e_j‖²), count as 0, so a constant embedding has exactly
// zero distances). Only the upper triangle is formed (one matrix product
// per tile of a block row) and it is turned into float32 distances tile by
// tile, with the row sums R, R¹ and Σa² accumulated in float64. A second
// pass over the upper triangle overwrites the distances with M (float32)
// and accumulates its row sums; M·E is then two matrix products per block
// row (the block row of the upper triangle, and the block column above it
// transposed). Both passes and the products run on two goroutines over
// fixed row ranges, each with its own accumulators that are added in a
// fixed order at the end, so the result does not depend on timing. One
// float32 n×n buffer is held and reused (268 MB at n = 8192); besides it
// only n×d floats (M·E) and O(n) float64 vectors are kept. Time is
// O(n²·d) for the products (1½ n²·d multiply–adds) plus two scalar O(n²/2)
// passes.
//
// # Degenerate batches
//
// A one-class batch (dCov²(y, y) = 0) or a constant embedding
// (dCov²(e, e) = 0) makes dCor 0/0: the loss is then defined as 0 and the
// gradient as 0 — there is no label information to hide, or nothing the
// defence could move. A batch of fewer than two rows is treated the same.
//
// A DCor holds buffers: use it from one goroutine.
type DCor struct {
	// Alpha is the loss weight α_d > 0.
	Alpha float64

	buf   *tensor.Matrix // n×n: Gram, then distances, then M (upper triangle + diagonal blocks)
	me    *tensor.Matrix // n×d: M·E
	norm  []float64      // ‖e_i‖²
	yf    []float64      // labels as 0/1
	z     []float64      // y_i − p
	r     []float64      // R_i, then u_i of the M pass
	r1    []float64      // R¹_i, then w_i of the M pass
	rowsM []float64      // row sums of M
	// Per-row partial sums over the upper triangle (each row is owned by
	// one worker) and per-worker column sums.
	rowS, rowS1 []float64
	work        [dcorWorkers]dcorWorker
	wg          sync.WaitGroup
}

// dcorWorker is one goroutine's share of the O(n²) passes.
type dcorWorker struct {
	lo, hi     int       // block rows [lo, hi) of the distance and M passes
	plo, phi   int       // block rows of the M·E product
	col0, col1 []float64 // distance pass: Σ_{i<j, y_i=0} a_ij, Σ_{i<j, y_i=1} a_ij per j; M pass: col0 = Σ_{i<j} M_ij
	sumSq      float64   // Σ_{i<j} a_ij²
}

func init() {
	Register(Spec{Name: "dcor", Color: 0x009e73, Rank: 6, Role: AddOn, Help: "distance-correlation loss between the cut embedding and the labels",
		Params:  []Param{{Key: "dcor_alpha", Symbol: "α", Help: "distance-correlation defence weight α_d", Min: 0, MinOpen: true, Max: math.Inf(1)}},
		NewLoss: func(p Params) (LossTerm, error) { return NewDCor(p.Get("dcor_alpha")) }})
}

// Name returns "dcor".
func (*DCor) Name() string { return "dcor" }

// NewDCor returns the distance-correlation loss with weight alpha > 0.
func NewDCor(alpha float64) (*DCor, error) {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, fmt.Errorf("protect: dCor weight α = %v, want a finite α > 0", alpha)
	}
	return &DCor{Alpha: alpha, buf: &tensor.Matrix{}, me: &tensor.Matrix{}}, nil
}

// AddLossGrad returns the loss α·log dCor(e, y) of a batch and ADDS its
// gradient with respect to e into grad (n×d, the same shape as e), so that
// grad can already hold ∂L/∂e of the other loss terms. y holds one label
// per row of e, each 0 or 1 (anything else is an error).
func (c *DCor) AddLossGrad(e *tensor.Matrix, y []float32, grad *tensor.Matrix) (float64, error) {
	if e == nil || grad == nil {
		return 0, fmt.Errorf("protect: dCor: nil embedding or gradient")
	}
	n, d := e.Rows, e.Cols
	if len(y) != n {
		return 0, fmt.Errorf("protect: dCor: %d labels for %d embedding rows", len(y), n)
	}
	if !tensor.SameShape(e, grad) {
		return 0, fmt.Errorf("protect: dCor: gradient is %d×%d, embedding %d×%d", grad.Rows, grad.Cols, n, d)
	}
	if err := tensor.CheckFinite("protect: dCor: embedding", e); err != nil {
		return 0, err
	}
	ones := 0
	for i, v := range y {
		switch v {
		case 1:
			ones++
		case 0:
		default:
			return 0, fmt.Errorf("protect: dCor: label %d is %v, want 0 or 1", i, v)
		}
	}
	if n < 2 || ones == 0 || ones == n || d == 0 {
		return 0, nil
	}
	c.prepare(e, y, ones)
	nf := float64(n)
	p := float64(ones) / nf

	// Pass 1: upper-triangle distances and their row sums.
	c.parallel(func(w *dcorWorker) { c.distances(e, w) })
	var sumSq, sumR, sumR2, zaz float64
	for _, w := range c.work {
		sumSq += 2 * w.sumSq
	}
	for i := range n {
		var c0, c1 float64
		for k := range c.work {
			c0 += c.work[k].col0[i]
			c1 += c.work[k].col1[i]
		}
		r, r1 := c.rowS[i]+c0+c1, c.rowS1[i]+c1
		c.r[i], c.r1[i] = r, r1
		sumR += r
		sumR2 += r * r
		zaz += c.z[i] * (r1 - p*r)
	}
	n2 := nf * nf
	see := (sumSq - 2*sumR2/nf + sumR*sumR/n2) / n2
	sey := -2 * zaz / n2
	syy := 4 * p * p * (1 - p) * (1 - p)
	if !(see > 0) {
		return 0, nil
	}
	dcor := sey / math.Sqrt(see*syy)
	if !(dcor > dcorFloor) {
		return c.Alpha * math.Log(dcorFloor), nil
	}
	loss := c.Alpha * math.Log(dcor)

	// Pass 2: M over the upper triangle, then M·E.
	ky, ke := 2*c.Alpha/(n2*sey), 2*c.Alpha/(n2*see)
	m := sumR / n2
	for i := range n {
		c.r[i] = ke * (c.r[i]/nf - m/2) // u_i
		c.r1[i] = -2 * ky * c.z[i]      // w_i
	}
	c.parallel(func(w *dcorWorker) { c.weights(w, ke) })
	c.parallel(func(w *dcorWorker) { c.product(e, w) })
	for i := range n {
		s := c.rowsM[i]
		for k := range c.work {
			s += c.work[k].col0[i]
		}
		gr, er, mr := grad.Row(i), e.Row(i), c.me.Row(i)
		for k := range d {
			gr[k] += float32(s*float64(er[k]) - float64(mr[k]))
		}
	}
	return loss, nil
}

// prepare sizes the buffers for an n-row batch, fills the norms, labels
// and z, and splits the block rows between the workers: the triangle
// passes by equal area, the product by equal count.
func (c *DCor) prepare(e *tensor.Matrix, y []float32, ones int) {
	n := e.Rows
	c.buf.Resize(n, n)
	c.me.Resize(n, e.Cols)
	for _, s := range []*[]float64{&c.norm, &c.yf, &c.z, &c.r, &c.r1, &c.rowsM, &c.rowS, &c.rowS1} {
		*s = buf.Grow(*s, n)
	}
	p := float64(ones) / float64(n)
	for i := range n {
		c.norm[i] = rowNorm2(e.Row(i))
		c.yf[i] = float64(y[i])
		c.z[i] = c.yf[i] - p
	}
	clear(c.rowS)
	clear(c.rowS1)
	nb := (n + dcorBlock - 1) / dcorBlock
	// Block row b of the triangle holds about (n − b·dcorBlock) columns per
	// row; give the first worker the first blocks up to half the area.
	split, area, half := 0, 0, n*(n+1)/4
	for split < nb && area+dcorBlock*(n-split*dcorBlock) <= half {
		area += dcorBlock * (n - split*dcorBlock)
		split++
	}
	if nb > 1 && split == 0 {
		split = 1
	}
	if nb == 1 {
		split = 1
	}
	c.work[0].lo, c.work[0].hi = 0, split
	c.work[1].lo, c.work[1].hi = split, nb
	c.work[0].plo, c.work[0].phi = 0, (nb+1)/2
	c.work[1].plo, c.work[1].phi = (nb+1)/2, nb
	for k := range c.work {
		w := &c.work[k]
		w.col0, w.col1 = buf.Grow(w.col0, n), buf.Grow(w.col1, n)
		clear(w.col0)
		clear(w.col1)
		w.sumSq = 0
	}
}

// parallel runs f for every worker, the first on a new goroutine, and
// waits for all of them.
func (c *DCor) parallel(f func(w *dcorWorker)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f(&c.work[1])
	}()
	f(&c.work[0])
	c.wg.Wait()
}

// distances turns w's block rows of the upper triangle into distances,
// tile by tile: one Gram product per tile, then a_ij for j > i with the
// row sums R_i, R¹_i (rowS, rowS1), the column sums (w.col0, w.col1 by the
// class of the row) and Σ a_ij².
func (c *DCor) distances(e *tensor.Matrix, w *dcorWorker) {
	n, d := e.Rows, e.Cols
	const eps32 = 1.1920929e-07
	cols := [2][]float64{w.col0, w.col1}
	var sumSq float64
	for b := w.lo; b < w.hi; b++ {
		i0, i1 := b*dcorBlock, min((b+1)*dcorBlock, n)
		for j0 := i0; j0 < n; j0 += dcorTile {
			j1 := min(j0+dcorTile, n)
			tensor.Default.Sgemm(false, true, i1-i0, j1-j0, d, 1, e.Data[i0*d:], d, e.Data[j0*d:], d, 0, c.buf.Data[i0*n+j0:], n)
			for i := i0; i < i1; i++ {
				lo := max(j0, i+1)
				if lo >= j1 {
					continue
				}
				row := c.buf.Data[i*n+lo : i*n+j1]
				ni := c.norm[i]
				norm := c.norm[lo:j1]
				yf := c.yf[lo:j1]
				col := cols[int(c.yf[i])][lo:j1]
				var s, s1, sq float64
				for j, g := range row {
					nn := ni + norm[j]
					d2 := nn - 2*float64(g)
					var a32 float32
					if d2 > 4*eps32*nn {
						// float32 square root (SQRTSS): this and the
						// division of the M pass bound both passes.
						a32 = float32(math.Sqrt(float64(float32(d2))))
					}
					row[j] = a32
					a := float64(a32)
					s += a
					s1 += a * yf[j]
					sq += a * a
					col[j] += a
				}
				c.rowS[i] += s
				c.rowS1[i] += s1
				sumSq += sq
			}
		}
	}
	w.sumSq = sumSq
}

// weights overwrites w's block rows of the upper-triangle distances with
// M (c.r holds u, c.r1 holds w per row), mirrors the diagonal blocks into
// their lower halves, and accumulates M's row sums (rowsM for the row
// side, w.col0 for the column side).
func (c *DCor) weights(w *dcorWorker, ke float64) {
	n := c.buf.Rows
	clear(w.col0)
	for b := w.lo; b < w.hi; b++ {
		i0, i1 := b*dcorBlock, min((b+1)*dcorBlock, n)
		for i := i0; i < i1; i++ {
			c.buf.Data[i*n+i] = 0
			row := c.buf.Data[i*n+i+1 : i*n+n]
			u := c.r[i+1 : n]
			z := c.z[i+1 : n]
			col := w.col0[i+1 : n]
			ui, wi := c.r[i], c.r1[i]
			var s float64
			for j, a32 := range row {
				var m32 float32
				if a32 > 0 {
					// The numerator −2k_y·z_i·z_j − k_e·A_ij cancels, so it
					// is formed in float64; the division is float32.
					m32 = float32(wi*z[j]+ui+u[j]-ke*float64(a32)) / a32
				}
				row[j] = m32
				m := float64(m32)
				s += m
				col[j] += m
			}
			c.rowsM[i] = s
			// Mirror the diagonal block: rows i+1…i1−1 of column i.
			for j := i + 1; j < i1; j++ {
				c.buf.Data[j*n+i] = c.buf.Data[i*n+j]
			}
		}
	}
}

// product sets w's block rows of c.me to M·E: the block row of the upper
// triangle (with its mirrored diagonal block) times the rows of E from the
// block on, plus the transposed block column above the diagonal times the
// rows before it.
func (c *DCor) product(e *tensor.Matrix, w *dcorWorker) {
	n, d := e.Rows, e.Cols
	for b := w.plo; b < w.phi; b++ {
		i0, i1 := b*dcorBlock, min((b+1)*dcorBlock, n)
		tensor.Default.Sgemm(false, false, i1-i0, d, n-i0, 1, c.buf.Data[i0*n+i0:], n, e.Data[i0*d:], d, 0, c.me.Data[i0*d:], d)
		if i0 > 0 {
			tensor.Default.Sgemm(true, false, i1-i0, d, i0, 1, c.buf.Data[i0:], n, e.Data, d, 1, c.me.Data[i0*d:], d)
		}
	}
}
