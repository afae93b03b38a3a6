// Package sgemm is splitguard's pure-Go single-precision matrix product:
// hand-written AVX-512 and AVX2+FMA micro-kernels in Go assembly (amd64),
// driven by a blocked, packed, parallel loop nest in Go. The tensor
// package wraps it as its default engine; it is a package of its own
// because a package using cgo (tensor's OpenBLAS engine) cannot hold Go
// assembly.
package sgemm

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/internal/par"
)

// kernelFunc is an assembly micro-kernel: one mr×nr tile of C from k steps
// of A and a packed panel of B, plus beta times src's rows (lds floats
// apart: C itself, or with lds 0 one row for all, a bias) where load is
// not 0 (see kernels_amd64.s for the layouts).
type kernelFunc func(k int, a *float32, as int, b *float32, bs int, c *float32, ldc int, alpha, beta float32, load int, src *float32, lds int)

// Kernel is one instruction set's pair of micro-kernels, its tile, and
// the product built on them.
//
// Large products are cut into blocks of rows and columns computed on up to
// GOMAXPROCS goroutines (internal/par's workers). The cut falls on whole
// tiles and every entry of C is summed over k in order within one tile, so results are
// bit-identical whatever GOMAXPROCS is and wherever the operands sit in
// memory; they differ in the last bits between kernels and from other
// implementations. Products with one or two columns go through unrolled
// dot products or axpys, very small ones through a plain loop: both sum in
// an order fixed by the indices alone. (gonum's assembly dot product
// first steps to a 16-byte boundary of one operand, so its sums depend on
// the operand's address; it is not used here.)
type Kernel struct {
	name   string
	mr, nr int
	// cols reads A(i, p) at a[p·as+i], rows at a[i·as+p].
	cols, rows kernelFunc
	// packRows copies kc rows of nr floats, ldb apart, contiguously
	// (packB's whole slivers of an untransposed B); nil: copy row by row.
	packRows func(dst, src *float32, ldb, kc int)
}

// Blocking of Sgemm: a panel of kc steps of B for nc columns is packed
// once and swept over all of A in blocks of mc rows; one nr-wide sliver
// of the panel (kc·nr floats, 32 KiB for AVX-512) stays in L1 while the
// mc×kc block of A streams from L2 through it.
const (
	blockK = 256
	blockM = 384
	blockN = 2048
)

// Parallel split: a product of at least parFlops multiply-adds per part is
// cut into parts, a grid of row and column ranges of C (see grid), one
// goroutine each.
const parFlops = 1 << 19

// Name says which instruction set the kernel uses: "avx512" or "avx2".
func (e *Kernel) Name() string { return e.name }

// Sgemm sets C = alpha·op(A)·op(B) + beta·C on row-major storage, where
// op(X) is X or Xᵀ, op(A) is m×k, op(B) k×n, C m×n, and lda, ldb, ldc are
// the row strides. With beta == 0, C is not read. It panics when a slice
// is too short for its shape and stride.
func (e *Kernel) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	e.SgemmBlocks(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil, nil)
}

// SgemmBlocks is Sgemm with an element-wise pass before and after each
// block of C that one part computes: before(i0, i1, j0, j1) runs on rows
// [i0, i1) and columns [j0, j1) of C just before the part's product reads
// them, after(…) on the same block just after it has written them, both
// on the part's goroutine (either may be nil). Every entry of C is in
// exactly one block, so a pass that sets C's starting values (a bias
// broadcast, with beta 1) or reads its final ones (a ReLU) gives the same
// result as a pass over all of C before or after Sgemm, without a
// parallel region of its own and on the core whose cache holds the
// block. A product that is not split runs before and after once, on all
// of C.
func (e *Kernel) SgemmBlocks(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, before, after func(i0, i1, j0, j1 int)) {
	e.sgemmBlocks(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, nil, c, ldc, before, after)
}

// SgemmBias sets C = alpha·op(A)·op(B) + bias, bias (n long) added to
// every row of C, with after run on each block of C as SgemmBlocks runs
// it. The result is bit for bit that of SgemmBlocks with beta 1 and a
// before that copies bias into each row of its block; the tiles' kernels
// add bias as they store, so C is written once and never read first (at
// batch 8,192 a 128-wide layer's C is 4 MB). It panics when bias is
// shorter than n.
func (e *Kernel) SgemmBias(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int, after func(i0, i1, j0, j1 int)) {
	if len(bias) < n {
		panic(fmt.Sprintf("tensor: SgemmBias given %d biases for %d columns", len(bias), n))
	}
	e.sgemmBlocks(transA, transB, m, n, k, alpha, a, lda, b, ldb, 1, bias[:n:n], c, ldc, nil, after)
}

// sgemmBlocks is SgemmBlocks, and SgemmBias where bias is not nil.
func (e *Kernel) sgemmBlocks(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, bias, c []float32, ldc int, before, after func(i0, i1, j0, j1 int)) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkOperand("A", ar, ac, a, lda)
	checkOperand("B", br, bc, b, ldb)
	checkOperand("C", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	pr, pc := e.cut(m, n, k, alpha)
	if pr*pc < 2 {
		e.block(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc, 1, 1, 0, before, after)
		return
	}
	r := manyRuns.Get().(*manyRun)
	r.e, r.n, r.bias, r.before, r.after = e, 1, bias, before, after
	r.ps[0] = Product{TransA: transA, TransB: transB, M: m, N: n, K: k, Alpha: alpha, A: a, Lda: lda, B: b, Ldb: ldb, Beta: beta, C: c, Ldc: ldc}
	r.pr[0], r.pc[0] = pr, pc
	par.Do(pr*pc, r.part)
	r.release()
}

// thinFlops is the fewest multiply-adds a part of a thin product (one or
// two columns: a logit layer's forward pass and its weight gradient) gets
// when the product is cut: its dot products and axpys run at a fraction of
// the tiled kernels' speed, so a part of this many takes 15–30 µs.
const thinFlops = 1 << 16

// minCutK is the shortest k that cut counts a product's multiply-adds by:
// a product with a shorter one (the outer product dy·Wᵀ of a logit layer's
// input gradient, k = 1) costs about as much per entry of C written as
// one with k = minCutK.
const minCutK = 8

// cut returns how a product is cut into parts: pr row ranges by pc column
// ranges of whole tiles (1 by 1: computed whole on one goroutine). A thin
// product (n ≤ 2) is cut into row ranges only, each summed by thin in the
// same order as the whole.
func (e *Kernel) cut(m, n, k int, alpha float32) (pr, pc int) {
	if k == 0 || alpha == 0 || m*n*k < 2048 {
		return 1, 1
	}
	mt, nt := (m+e.mr-1)/e.mr, (n+e.nr-1)/e.nr // tiles along each side
	if n <= 2 {
		return max(1, min(runtime.GOMAXPROCS(0), m*n*k/thinFlops, mt)), 1
	}
	parts := min(runtime.GOMAXPROCS(0), m*n*max(k, minCutK)/parFlops)
	pr, pc = grid(parts, mt, nt, m, n)
	if pc == 1 && pr > 1 {
		pr = max(pr, fineRowParts(parts, m, mt, m*n*k))
	}
	return pr, pc
}

// block computes block q (row range q/pc, column range q%pc) of the
// product cut into pr×pc blocks, with before and after on it; 1×1 is
// the whole product, through whichever path suits its shape. A non-nil
// bias (SgemmBias, beta 1) is C's starting value in every row: the tiled
// path adds it as it stores, the others copy it into C first.
func (e *Kernel) block(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, bias, c []float32, ldc int, pr, pc, q int, before, after func(i0, i1, j0, j1 int)) {
	if pr*pc < 2 {
		if before != nil {
			before(0, m, 0, n)
		}
		if k != 0 && alpha != 0 && n > 2 && m*n*k >= 2048 {
			e.serial(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, bias, c, ldc)
		} else {
			if bias != nil {
				fillRows(c, ldc, 0, m, bias)
			}
			switch {
			case k == 0 || alpha == 0:
				scaleC(m, n, beta, c, ldc)
			case n <= 2:
				thin(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			default:
				small(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			}
		}
		if after != nil {
			after(0, m, 0, n)
		}
		return
	}
	mt, nt := (m+e.mr-1)/e.mr, (n+e.nr-1)/e.nr
	r, col := q/pc, q%pc
	i0, i1 := mt*r/pr*e.mr, min(mt*(r+1)/pr*e.mr, m)
	j0, j1 := nt*col/pc*e.nr, min(nt*(col+1)/pc*e.nr, n)
	ao, bo := i0*lda, j0
	if transA {
		ao = i0
	}
	if transB {
		bo = j0 * ldb
	}
	if before != nil {
		before(i0, i1, j0, j1)
	}
	if n <= 2 {
		// A thin product's rows (cut only into row ranges): each entry
		// summed by thin in the order of the whole product.
		if bias != nil {
			fillRows(c, ldc, i0, i1, bias)
		}
		thin(transA, transB, i1-i0, n, k, alpha, a[ao:], lda, b, ldb, beta, c[i0*ldc:], ldc)
	} else {
		if bias != nil {
			bias = bias[j0:j1]
		}
		e.serial(transA, transB, i1-i0, j1-j0, k, alpha, a[ao:], lda, b[bo:], ldb, beta, bias, c[i0*ldc+j0:], ldc)
	}
	if after != nil {
		after(i0, i1, j0, j1)
	}
}

// fineRows is the fewest rows of C a part of a product cut into row
// ranges gets when it is cut finer than one part per core (fineRowParts).
const fineRows = 1024

// fineRowParts is how many row ranges a tall product (m rows, mt tiles
// of them, flops multiply-adds) cut for parts cores is cut into: up to
// four per core, of at least fineRows rows and parFlops each. The cores
// claim the ranges in turn (internal/par), so a core that another
// process or a slower cache holds up takes fewer of them instead of
// keeping the others waiting at the end of the product; each range packs
// the whole of B again, which is why a range needs many rows. Below
// 2·fineRows rows it returns 1 (one range per core, as grid cut it).
func fineRowParts(parts, m, mt, flops int) int {
	return min(4*parts, m/fineRows, flops/parFlops, mt)
}

// grid chooses how to cut C into at most parts blocks: pr row ranges by
// pc column ranges of whole tiles (mt and nt tiles along each side). Each
// block reads its rows of A and packs its columns of B, k long, so the
// cut minimises what all blocks read together, pc·m + 2·pr·n (packing B
// writes what it reads), among the grids that use the most parts. A tall
// product (a forward pass, B×in times in×out) is cut into row ranges; a
// small C with a long k (a weight gradient, xᵀ·dy) into a square-ish grid,
// where row ranges alone would have every part pack all of dy.
func grid(parts, mt, nt, m, n int) (pr, pc int) {
	pr, pc = 1, 1
	best := -1
	for r := 1; r <= min(parts, mt); r++ {
		q := min(parts/r, nt)
		cost := q*m + 2*r*n
		if use := r * q; use > pr*pc || use == pr*pc && cost < best {
			pr, pc, best = r, q, cost
		}
	}
	return pr, pc
}

// thin computes a product with one or two columns (a logit layer and its
// gradients) one column at a time with dot products (A row by row) or
// axpys (Aᵀ, step by step); as tiles these would waste most of each
// register. Both sum over k in index order, so the result does not depend
// on where the operands sit in memory, nor on which rows of C one call
// computes (cut splits a large one into row ranges on several cores).
func thin(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	var tmp, col []float32
	sc := gemmBufs.Get().(*gemmBuf)
	defer gemmBufs.Put(sc)
	sc.tile = buf.Grow(sc.tile, m+k)
	tmp, col = sc.tile[:m], sc.tile[m:]
	for j := range n {
		// Column j of op(B), gathered so that the dot products and axpys
		// read it with unit stride.
		for p := range k {
			if transB {
				col[p] = b[j*ldb+p]
			} else {
				col[p] = b[p*ldb+j]
			}
		}
		if !transA {
			dots(c[j:], ldc, a, lda, col[:k], 0, m, alpha, beta)
			continue
		}
		clear(tmp)
		for p, bp := range col {
			axpy(bp, a[p*lda:p*lda+m], tmp)
		}
		for i, v := range tmp {
			setScaled(&c[i*ldc+j], alpha*v, beta)
		}
	}
}

// dots sets c[i·ldc] = alpha·(row i of a)·col (+ beta·c[i·ldc]) for rows
// i in [i0, i1): one column of a thin product, a dot product per row.
func dots(c []float32, ldc int, a []float32, lda int, col []float32, i0, i1 int, alpha, beta float32) {
	k := len(col)
	for i := i0; i < i1; i++ {
		setScaled(&c[i*ldc], alpha*dot(a[i*lda:i*lda+k], col), beta)
	}
}

// dot returns Σ x[i]·y[i] over len(x) ≤ len(y), in four interleaved
// partial sums (x[i] goes to sum i mod 4) added as (s0+s1)+(s2+s3), then
// the remainder in order: an order fixed by the indices alone.
func dot(x, y []float32) float32 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	s := (s0 + s1) + (s2 + s3)
	for ; i < len(x); i++ {
		s += x[i] * y[i]
	}
	return s
}

// axpy sets y[i] += a·x[i] for i < len(x) ≤ len(y).
func axpy(a float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}

// small computes a product too small to pack (m·n·k < 2048) with a plain
// loop, each entry summed over k in order.
func small(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := range m {
		for j := range n {
			var s float32
			for p := range k {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				s += a[ai] * b[bi]
			}
			setScaled(&c[i*ldc+j], alpha*s, beta)
		}
	}
}

// setScaled sets *c = v + beta·*c, or v without reading *c when beta is 0.
func setScaled(c *float32, v, beta float32) {
	if beta == 0 {
		*c = v
		return
	}
	*c = v + beta**c
}

// checkOperand panics unless x holds an r×c matrix with row stride ld.
func checkOperand(name string, r, c int, x []float32, ld int) {
	if r < 0 || c < 0 {
		panic(fmt.Sprintf("tensor: Sgemm %s has negative shape %d×%d", name, r, c))
	}
	if ld < max(c, 1) {
		panic(fmt.Sprintf("tensor: Sgemm %s has row stride %d, less than its %d columns", name, ld, c))
	}
	if r > 0 && c > 0 && len(x) < (r-1)*ld+c {
		panic(fmt.Sprintf("tensor: Sgemm %s holds %d values, a %d×%d matrix with row stride %d needs %d", name, len(x), r, c, ld, (r-1)*ld+c))
	}
}

// fillRows copies row (C's width) into rows [i0, i1) of C.
func fillRows(c []float32, ldc, i0, i1 int, row []float32) {
	for i := i0; i < i1; i++ {
		copy(c[i*ldc:i*ldc+len(row)], row)
	}
}

// scaleC sets C = beta·C, or C = 0 without reading it when beta is 0.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// gemmBuf is one goroutine's packing space.
type gemmBuf struct{ b, a, tile []float32 }

var gemmBufs = sync.Pool{New: func() any { return new(gemmBuf) }}

// serial computes the product on the calling goroutine; a non-nil bias
// (n long, beta 1) is added to every row in place of C's starting value,
// which is then never read.
func (e *Kernel) serial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, bias, c []float32, ldc int) {
	mr, nr := e.mr, e.nr
	sc := gemmBufs.Get().(*gemmBuf)
	defer gemmBufs.Put(sc)
	kcMax, ncMax := min(k, blockK), min(n, blockN)
	sc.b = buf.Grow(sc.b, kcMax*((ncMax+nr-1)/nr*nr))
	sc.a = buf.Grow(sc.a, kcMax*mr)
	sc.tile = buf.Grow(sc.tile, mr*nr)
	tile := sc.tile
	for p0 := 0; p0 < k; p0 += blockK {
		kc := min(blockK, k-p0)
		bt, load := beta, 1
		if p0 > 0 {
			bt = 1
		} else if beta == 0 && bias == nil {
			load = 0
		}
		fromBias := p0 == 0 && bias != nil
		for j0 := 0; j0 < n; j0 += blockN {
			nc := min(blockN, n-j0)
			e.packB(transB, b, ldb, p0, kc, j0, nc, sc.b)
			for i0 := 0; i0 < m; i0 += blockM {
				mc := min(blockM, m-i0)
				full := mc / mr * mr // rows in whole tiles
				if full < mc {
					packA(transA, a, lda, i0+full, mc-full, p0, kc, mr, sc.a)
				}
				for jj := 0; jj < nc; jj += nr {
					ncc := min(nr, nc-jj)
					bp := &sc.b[jj*kc]
					for ii := 0; ii < mc; ii += mr {
						i := i0 + ii
						kern, ap, as := e.cols, &sc.a[0], mr
						switch {
						case ii >= full:
						case transA:
							ap, as = &a[p0*lda+i], lda
						default:
							kern, ap, as = e.rows, &a[i*lda+p0], lda
						}
						cp := &c[i*ldc+j0+jj]
						if ii < full && ncc == nr {
							src, lds := cp, ldc
							if fromBias {
								src, lds = &bias[j0+jj], 0
							}
							kern(kc, ap, as, bp, nr, cp, ldc, alpha, bt, load, src, lds)
							continue
						}
						kern(kc, ap, as, bp, nr, &tile[0], nr, alpha, 0, 0, &tile[0], nr)
						for r := range min(mr, mc-ii) {
							row := c[(i+r)*ldc+j0+jj : (i+r)*ldc+j0+jj+ncc]
							t := tile[r*nr : r*nr+ncc]
							if load == 0 {
								copy(row, t)
								continue
							}
							start := row
							if fromBias {
								start = bias[j0+jj : j0+jj+ncc]
							}
							for j, v := range t {
								row[j] = v + bt*start[j]
							}
						}
					}
				}
			}
		}
	}
}

// packB copies op(B)'s kc×nc block at (p0, j0) into dst as nr-wide
// slivers, each kc rows of nr floats; a last partial sliver is zero-padded.
// A whole sliver of an untransposed B goes through the kernel's packRows,
// one call a sliver rather than a copy (a memmove call) a row.
func (e *Kernel) packB(transB bool, b []float32, ldb, p0, kc, j0, nc int, dst []float32) {
	nr := e.nr
	for s := 0; s < nc; s += nr {
		w := min(nr, nc-s)
		d := dst[s*kc : s*kc+kc*nr]
		if w < nr {
			clear(d)
		}
		if !transB && w == nr && e.packRows != nil {
			off := p0*ldb + j0 + s
			_ = b[off+(kc-1)*ldb+nr-1] // the last float read, in bounds
			e.packRows(&d[0], &b[off], ldb, kc)
			continue
		}
		if !transB {
			for p := range kc {
				off := (p0+p)*ldb + j0 + s
				copy(d[p*nr:p*nr+w], b[off:off+w])
			}
			continue
		}
		for j := range w {
			src := b[(j0+s+j)*ldb+p0:]
			src = src[:kc]
			for p, v := range src {
				d[p*nr+j] = v
			}
		}
	}
}

// packA copies rows i0 … i0+rows-1 (rows < mr) of op(A), steps p0 … p0+kc-1,
// into dst as kc groups of mr floats, zero-padded to mr rows.
func packA(transA bool, a []float32, lda, i0, rows, p0, kc, mr int, dst []float32) {
	d := dst[:kc*mr]
	clear(d)
	for r := range rows {
		if transA {
			for p := range kc {
				d[p*mr+r] = a[(p0+p)*lda+i0+r]
			}
			continue
		}
		src := a[(i0+r)*lda+p0:]
		src = src[:kc]
		for p, v := range src {
			d[p*mr+r] = v
		}
	}
}
