//go:build !amd64

package tensor

// supportedKernels lists the assembly micro-kernels of this architecture:
// none yet outside amd64, where the gonum engine is the default.
func supportedKernels() []*microKernel { return nil }
