package tensor

import "github.com/splitguard/splitguard/tensor/internal/sgemm"

// SIMDEngine computes products with hand-written AVX-512 or AVX2+FMA
// micro-kernels in Go assembly (package tensor/internal/sgemm): the B
// panel is packed, A is read in place (only a last partial tile of rows is
// copied), blocks are sized for the L1 and L2 caches, and large products
// are cut on whole tiles into row or column ranges computed on up to
// GOMAXPROCS goroutines. Results are bit-identical whatever GOMAXPROCS is
// and wherever the operands sit in memory, and differ in the last bits
// between kernels and from other engines. Products with one or two columns
// go through unrolled dot products or axpys, very small ones through a
// plain loop.
type SIMDEngine struct{ k *sgemm.Kernel }

// Name implements Engine: "go-avx512" or "go-avx2".
func (e SIMDEngine) Name() string { return "go-" + e.k.Name() }

// Sgemm implements Engine.
func (e SIMDEngine) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	e.k.Sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// simdEngines returns one SIMDEngine per micro-kernel the CPU runs,
// fastest first (none on CPUs without AVX2+FMA and off amd64).
func simdEngines() []SIMDEngine {
	var es []SIMDEngine
	for _, k := range sgemm.Kernels() {
		es = append(es, SIMDEngine{k})
	}
	return es
}

// SgemmBlocks implements BlockEngine.
func (e SIMDEngine) SgemmBlocks(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, before, after func(i0, i1, j0, j1 int)) {
	e.k.SgemmBlocks(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, before, after)
}

// SgemmBias implements BiasEngine.
func (e SIMDEngine) SgemmBias(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int, after func(i0, i1, j0, j1 int)) {
	e.k.SgemmBias(transA, transB, m, n, k, alpha, a, lda, b, ldb, bias, c, ldc, after)
}
