package protect

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/tensor"
)

// dcorFloor is the smallest dCor whose logarithm the loss takes; below it
// (the sample dCov²(e, y) is 0 up to rounding) the loss is α·log(dcorFloor)
// and the gradient 0.
const dcorFloor = 1e-12

// DCor is the distance-correlation defence of SPEC §4 (`001_…` §7): the
// extra loss α·log dCor(e, y) per batch, with
//
//	dCor = dCov²(e, y) / sqrt(dCov²(e, e)·dCov²(y, y)),
//
// the V-statistics of Székely et al. from the double-centred pairwise
// distance matrices A (of the embedding rows, Euclidean) and B (of the
// labels, |y_i − y_j|): dCov²(x, z) = (1/n²)·Σ_ij X_ij Z_ij.
//
// # Gradient
//
// Double-centring is linear and idempotent, so Σ A_ij B_ij = Σ a_ij B_ij
// and ∂dCov²(e,e)/∂a_ij = 2A_ij/n², ∂dCov²(e,y)/∂a_ij = B_ij/n². With
// W_ij = B_ij/(n²·dCov²(e,y)) − A_ij/(n²·dCov²(e,e)) and a_ij = ‖e_i − e_j‖,
//
//	∂(α log dCor)/∂e_i = Σ_j M_ij (e_i − e_j) = (Σ_j M_ij)·e_i − (M·E)_i,
//	M_ij = 2α·W_ij / a_ij  (0 when a_ij = 0: the gradient of a distance at 0 is taken as 0).
//
// # Cost and memory
//
// Distances come from one product E·Eᵀ (‖e_i‖² + ‖e_j‖² − 2⟨e_i, e_j⟩,
// clamped at 0; values below the float32 rounding of that expression,
// 4·ε₃₂·(‖e_i‖² + ‖e_j‖²), count as 0, so a constant embedding has exactly
// zero distances). One float32 n×n buffer is held and reused: it holds
// E·Eᵀ, then the distances a, then M, overwritten in place; A and B are
// formed on the fly from a, the labels and float64 row means. For n = 8192
// that buffer is 268 MB; besides it only n×d floats (M·E) and O(n) float64
// vectors are kept. Time is O(n²·d) for the two products plus O(n²).
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

	buf   *tensor.Matrix // n×n
	me    *tensor.Matrix // n×d
	norm  []float64      // ‖e_i‖²
	ra    []float64      // row means of a
	rb    []float64      // row means of b
	rowsM []float64      // row sums of M
}

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
// (any real values; 0/1 here) per row of e.
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
	if err := tensor.CheckFiniteSlice("protect: dCor: labels", y); err != nil {
		return 0, err
	}
	if n < 2 {
		return 0, nil
	}
	c.norm = growF64(c.norm, n)
	c.ra = growF64(c.ra, n)
	c.rb = growF64(c.rb, n)
	c.rowsM = growF64(c.rowsM, n)
	for i := range n {
		c.norm[i] = rowNorm2(e.Row(i))
	}
	// Gram matrix, then distances in place, with float64 row means.
	tensor.MatMul(c.buf, e, false, e, true, 1, 0)
	a := c.buf
	nf := float64(n)
	const eps32 = 1.1920929e-07
	var ma, mb float64
	for i := range n {
		row := a.Row(i)
		var s, sb float64
		for j := range n {
			nn := c.norm[i] + c.norm[j]
			d2 := nn - 2*float64(row[j])
			var dist float64
			if i != j && d2 > 4*eps32*nn {
				dist = math.Sqrt(d2)
			}
			row[j] = float32(dist)
			s += float64(row[j])
			sb += math.Abs(float64(y[i]) - float64(y[j]))
		}
		c.ra[i], c.rb[i] = s/nf, sb/nf
		ma += s
		mb += sb
	}
	ma /= nf * nf
	mb /= nf * nf
	// dCov² sums with A and B formed on the fly.
	var sey, see, syy float64
	for i := range n {
		row := a.Row(i)
		for j := range n {
			A := float64(row[j]) - c.ra[i] - c.ra[j] + ma
			B := math.Abs(float64(y[i])-float64(y[j])) - c.rb[i] - c.rb[j] + mb
			sey += A * B
			see += A * A
			syy += B * B
		}
	}
	n2 := nf * nf
	sey, see, syy = sey/n2, see/n2, syy/n2
	if !(see > 0) || !(syy > 0) {
		return 0, nil
	}
	dcor := sey / math.Sqrt(see*syy)
	if !(dcor > dcorFloor) {
		return c.Alpha * math.Log(dcorFloor), nil
	}
	loss := c.Alpha * math.Log(dcor)
	// M in place of a, and its row sums.
	ky, ke := 2*c.Alpha/(n2*sey), 2*c.Alpha/(n2*see)
	for i := range n {
		row := a.Row(i)
		var s float64
		for j := range n {
			dist := float64(row[j])
			var m float64
			if dist > 0 {
				A := dist - c.ra[i] - c.ra[j] + ma
				B := math.Abs(float64(y[i])-float64(y[j])) - c.rb[i] - c.rb[j] + mb
				m = (ky*B - ke*A) / dist
			}
			row[j] = float32(m)
			s += float64(row[j])
		}
		c.rowsM[i] = s
	}
	tensor.MatMul(c.me, a, false, e, false, 1, 0)
	for i := range n {
		gr, er, mr := grad.Row(i), e.Row(i), c.me.Row(i)
		for k := range d {
			gr[k] += float32(c.rowsM[i]*float64(er[k]) - float64(mr[k]))
		}
	}
	return loss, nil
}

// growF64 returns a slice of length n, reusing s's storage.
func growF64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}
