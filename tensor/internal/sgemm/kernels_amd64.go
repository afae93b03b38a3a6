package sgemm

import "golang.org/x/sys/cpu"

// The micro-kernels of sgemm_amd64.s; see that file for what they compute.

//go:noescape
func kern512Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int)

//go:noescape
func kern512Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int)

//go:noescape
func kern256Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int)

//go:noescape
func kern256Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int)

var (
	avx512Kernel = &Kernel{name: "avx512", mr: 8, nr: 32, cols: kern512Cols, rows: kern512Rows}
	avx2Kernel   = &Kernel{name: "avx2", mr: 6, nr: 16, cols: kern256Cols, rows: kern256Rows}
)

// Kernels lists the micro-kernels this CPU (and its operating
// system, which must save the wide registers) can run, fastest first.
func Kernels() []*Kernel {
	var ks []*Kernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return ks
}
