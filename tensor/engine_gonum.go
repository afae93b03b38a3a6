package tensor

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// GonumEngine runs products through gonum's pure-Go BLAS. It is the
// default engine on CPUs without AVX2+FMA and on other architectures.
//
// gonum computes A·Bᵀ with its assembly dot product, which first steps to
// a 16-byte boundary of one operand, so its sums (and so a training run)
// would depend on where the allocator put B. GonumEngine copies such a B
// into its transpose first and multiplies with axpys, whose entries are
// each computed the same way wherever they sit: results depend only on the
// values and the shape.
type GonumEngine struct{}

// Name implements Engine.
func (GonumEngine) Name() string { return "gonum" }

// transposed holds the copies of Bᵀ.
var transposed = sync.Pool{New: func() any { return new([]float32) }}

// Sgemm implements Engine.
func (GonumEngine) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if transB && !transA && m > 0 && n > 0 && k > 0 {
		p := transposed.Get().(*[]float32)
		defer transposed.Put(p)
		if cap(*p) < k*n {
			*p = make([]float32, k*n)
		}
		bt := (*p)[:k*n]
		for j := range n {
			row := b[j*ldb : j*ldb+k]
			for q, v := range row {
				bt[q*n+j] = v
			}
		}
		b, ldb, transB = bt, n, false
	}
	gonum.Implementation{}.Sgemm(trans(transA), trans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
