package tensor

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// GonumEngine runs products through gonum's pure-Go BLAS. It is the
// default engine on CPUs without AVX2+FMA and on other architectures, and
// SIMDEngine hands it products too small or thin for its tiles.
type GonumEngine struct{}

// Name implements Engine.
func (GonumEngine) Name() string { return "gonum" }

// Sgemm implements Engine.
func (GonumEngine) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gonum.Implementation{}.Sgemm(trans(transA), trans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}
