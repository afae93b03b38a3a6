//go:build !amd64

package sgemm

// Kernels lists the assembly micro-kernels of this architecture:
// none yet outside amd64, where the gonum engine is the default.
func Kernels() []*Kernel { return nil }
