// Package tensor holds splitguard's numeric building block: a float32
// row-major matrix, and the single interface through which every matrix
// product in the project runs.
//
// The default [Engine] is splitguard's own AVX-512 or AVX2+FMA
// micro-kernels in Go assembly ([SIMDEngine]), chosen from the CPU's
// features at start; gonum's pure-Go BLAS ([GonumEngine]) on other CPUs
// and architectures. Building with the `openblas` tag switches it to
// OpenBLAS through cgo (Debian's libopenblas-dev); nothing else in the
// project changes. The finiteness checks run on internal/vec's assembly
// loops.
package tensor
