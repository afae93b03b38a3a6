// Package tensor holds splitguard's numeric building block: a float32
// row-major matrix, and the single interface through which every matrix
// product in the project runs.
//
// The default [Engine] is gonum's pure-Go BLAS. Building with the
// `openblas` tag switches it to OpenBLAS through cgo (Debian's
// libopenblas-dev); nothing else in the project changes.
package tensor
