package tensor

import (
	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/tensor/internal/sgemm"
)

// Product is one product of MatMulMany: C = Alpha·op(A)·op(B) + Beta·C,
// op transposing its argument where TransA or TransB says so. With Beta 0,
// C is resized to the product's shape first.
type Product struct {
	C, A, B        *Matrix
	TransA, TransB bool
	Alpha, Beta    float32
	// After, when set, runs on blocks of C once the product has written
	// them: after(i0, i1, j0, j1) on rows [i0, i1) and columns [j0, j1),
	// the blocks covering C exactly once, each (with the default SIMD
	// engines) in the parallel part that computed it, as MatMulBlocks'
	// after. It may read the block and write what nothing else in the
	// call reads or writes.
	After func(i0, i1, j0, j1 int)
}

// MatMulMany computes up to four independent products (as MatMul does
// each) and runs extra(0), …, extra(extraParts−1) beside them. With the
// default SIMD engines all of it is one parallel region: each product is
// cut into the same parts as by MatMul, so its result is the same bit for
// bit, and the cores claim the products' parts and the extra parts in
// turn, where one MatMul after another would have the cores meet at the
// end of each. Other engines compute the products in turn, then the
// extra parts. No product or extra part may write what another reads or
// writes.
func MatMulMany(ps []Product, extraParts int, extra func(p int)) {
	var sp [4]sgemm.Product
	if len(ps) > len(sp) {
		panic("tensor: MatMulMany given more than four products")
	}
	e, simd := Default.(SIMDEngine)
	if !simd {
		for _, p := range ps {
			MatMul(p.C, p.A, p.TransA, p.B, p.TransB, p.Alpha, p.Beta)
			rowPasses(p.C.Rows, p.C.Cols, p.After)
		}
		par.Do(extraParts, extra)
		return
	}
	for i, p := range ps {
		m, n, k := productShape(p.C, p.A, p.TransA, p.B, p.TransB, p.Beta)
		sp[i] = sgemm.Product{TransA: p.TransA, TransB: p.TransB, M: m, N: n, K: k, Alpha: p.Alpha,
			A: p.A.Data, Lda: max(p.A.Cols, 1), B: p.B.Data, Ldb: max(p.B.Cols, 1), Beta: p.Beta, C: p.C.Data, Ldc: max(n, 1), After: p.After}
	}
	e.k.SgemmMany(sp[:len(ps)], extraParts, extra)
}
