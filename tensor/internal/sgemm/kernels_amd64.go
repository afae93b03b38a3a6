package sgemm

import "golang.org/x/sys/cpu"

// The micro-kernels of kernels_amd64.s; see that file for what they
// compute. src and lds give what load adds: C (src = c, lds = ldc) or a
// row broadcast to every row of the tile (lds = 0).

//go:noescape
func kern512Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)

//go:noescape
func kern512Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)

//go:noescape
func kern256Cols(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)

//go:noescape
func kern256Rows(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)

// pack32 copies kc rows of 32 floats, ldb floats apart from src on, into
// dst one after another (a whole sliver of B for the AVX-512 kernels);
// pack16 does the same for rows of 16 (AVX2). kc > 0.
//
//go:noescape
func pack32(dst, src *float32, ldb, kc int)

//go:noescape
func pack16(dst, src *float32, ldb, kc int)

var (
	avx512Kernel = &Kernel{name: "avx512", mr: 8, nr: 32, cols: kern512Cols, rows: kern512Rows, packRows: pack32}
	avx2Kernel   = &Kernel{name: "avx2", mr: 6, nr: 16, cols: kern256Cols, rows: kern256Rows, packRows: pack16}
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
