package tensor

import (
	"fmt"
	"runtime"

	"github.com/splitguard/splitguard/internal/par"
)

// BlockEngine is an Engine that runs an element-wise pass on each block of
// C within the parallel part that computes the block (MatMulBlocks).
type BlockEngine interface {
	Engine
	// SgemmBlocks is Sgemm with before(i0, i1, j0, j1) run on rows
	// [i0, i1) and columns [j0, j1) of C just before the product reads
	// that block and after(…) just after it has written it, on the same
	// goroutine; every entry of C lies in exactly one block. Either may be
	// nil.
	SgemmBlocks(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, before, after func(i0, i1, j0, j1 int))
}

// BiasEngine is an Engine whose products can start from a bias row:
// C = alpha·op(A)·op(B) + bias in every row, with an element-wise pass on
// each block as BlockEngine's after (MatMulBias).
type BiasEngine interface {
	Engine
	// SgemmBias sets C = alpha·op(A)·op(B) + bias (bias n long, added
	// to every row) and runs after on each block of C once it is
	// written, as SgemmBlocks does.
	SgemmBias(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int, after func(i0, i1, j0, j1 int))
}

// MatMulBias sets c = op(a)·op(b) + bias, bias (c's width) added to every
// row: a dense layer's forward pass. after(i0, i1, j0, j1), when not nil,
// may read and rewrite rows [i0, i1) and columns [j0, j1) of c once the
// product has written them (a ReLU), as MatMulBlocks' after. The result
// is bit for bit that of MatMulBlocks with beta 1 and a before that copies
// bias into each row of its block. With a BiasEngine (the default SIMD
// engines) the bias is added as the tiles are stored, so c is written
// once and never read first; other engines copy bias into c first. It
// panics when bias is not c's width.
func MatMulBias(c *Matrix, a *Matrix, transA bool, b *Matrix, transB bool, bias []float32, after func(i0, i1, j0, j1 int)) {
	m, n, k := productShape(c, a, transA, b, transB, 0)
	if len(bias) != n {
		panic(fmt.Sprintf("tensor: MatMulBias given %d biases for a product %d wide", len(bias), n))
	}
	if m == 0 || n == 0 {
		return
	}
	if be, ok := Default.(BiasEngine); ok && k > 0 {
		be.SgemmBias(transA, transB, m, n, k, 1, a.Data, max(a.Cols, 1), b.Data, max(b.Cols, 1), bias, c.Data, max(n, 1), after)
		return
	}
	// Copied in a plain loop rather than a before pass: a closure over c
	// and bias would be a heap allocation per call (a convolution makes
	// one call per chunk of images).
	for i := range m {
		copy(c.Data[i*n:(i+1)*n], bias)
	}
	MatMul(c, a, transA, b, transB, 1, 1)
	rowPasses(m, n, after)
}

// MatMulBlocks is MatMul with an element-wise pass on C before and after
// the product: before(i0, i1, j0, j1) may set the entries of rows [i0, i1)
// and columns [j0, j1) of c (their starting values, which the product
// scales by beta and adds to), after(…) may read them once the product has
// written them. Each pass must touch only the entries of its block; the
// blocks together cover c exactly once. With a BlockEngine (the default
// SIMD engines) each block's passes run inside the parallel part that
// computes it, so a bias broadcast, the product and a ReLU are one
// parallel region instead of three, and each block stays in the cache of
// the core that computes it. Other engines get the passes over row
// ranges before and after the product. The result is the same as the
// passes over all of c before and after MatMul.
func MatMulBlocks(c *Matrix, a *Matrix, transA bool, b *Matrix, transB bool, alpha, beta float32, before, after func(i0, i1, j0, j1 int)) {
	m, n, k := productShape(c, a, transA, b, transB, beta)
	if m == 0 || n == 0 {
		return
	}
	if be, ok := Default.(BlockEngine); ok && k > 0 {
		be.SgemmBlocks(transA, transB, m, n, k, alpha, a.Data, max(a.Cols, 1), b.Data, max(b.Cols, 1), beta, c.Data, max(n, 1), before, after)
		return
	}
	rowPasses(m, n, before)
	MatMul(c, a, transA, b, transB, alpha, beta)
	rowPasses(m, n, after)
}

// rowPasses runs pass over an m×n matrix in row ranges, on several cores
// when it has at least 2¹⁵ entries a core.
func rowPasses(m, n int, pass func(i0, i1, j0, j1 int)) {
	if pass == nil {
		return
	}
	parts := min(runtime.GOMAXPROCS(0), m*n>>15, m)
	if parts < 2 {
		pass(0, m, 0, n)
		return
	}
	par.Do(parts, func(p int) { pass(m*p/parts, m*(p+1)/parts, 0, n) })
}
