package sgemm

import (
	"sync"

	"github.com/splitguard/splitguard/internal/par"
)

// Product is one product of SgemmMany: C = Alpha·op(A)·op(B) + Beta·C,
// with the shapes, strides and meaning of Sgemm's arguments.
type Product struct {
	TransA, TransB bool
	M, N, K        int
	Alpha          float32
	A              []float32
	Lda            int
	B              []float32
	Ldb            int
	Beta           float32
	C              []float32
	Ldc            int
	// After, when set, runs on each block of C that one part computes
	// (rows [i0, i1), columns [j0, j1)) just after the part has written
	// it, on the same goroutine, as SgemmBlocks' after does.
	After func(i0, i1, j0, j1 int)
}

// maxMany is the most products one SgemmMany takes.
const maxMany = 4

// manyRun is one parallel region of SgemmMany or a split SgemmBlocks:
// its own copy of the products and their cuts, the passes before and
// after each block (SgemmBlocks) or the extra parts (SgemmMany), and
// part, the function par.Do runs, made once per manyRun (a closure or
// method value made per call would be a fresh allocation, and so would
// the caller's products if the region kept the caller's slice).
type manyRun struct {
	e             *Kernel
	ps            [maxMany]Product
	pr, pc        [maxMany]int
	n             int
	bias          []float32 // a split SgemmBias's bias
	extra         func(int)
	before, after func(i0, i1, j0, j1 int)
	part          func(q int)
}

// manyRuns keeps manyRuns between calls: a training step has a few dozen
// regions, possibly from two parties' goroutines at once.
var manyRuns = sync.Pool{New: func() any {
	r := new(manyRun)
	r.part = r.run
	return r
}}

// run computes part q of the region: a block of one product, or after
// the products' blocks, extra part q − (their number).
func (r *manyRun) run(q int) {
	for i := range r.n {
		if n := r.pr[i] * r.pc[i]; q >= n {
			q -= n
			continue
		}
		p := &r.ps[i]
		after := r.after
		if p.After != nil {
			after = p.After
		}
		r.e.block(p.TransA, p.TransB, p.M, p.N, p.K, p.Alpha, p.A, p.Lda, p.B, p.Ldb, p.Beta, r.bias, p.C, p.Ldc, r.pr[i], r.pc[i], q, r.before, after)
		return
	}
	r.extra(q)
}

// release returns r to the pool, keeping no operand or callback alive
// there.
func (r *manyRun) release() {
	*r = manyRun{part: r.part}
	manyRuns.Put(r)
}

// SgemmMany computes up to four independent products and runs
// extra(0), …, extra(extraParts−1) beside them, all in one parallel
// region: each product is cut into the same blocks as by Sgemm (so its
// result is the same bit for bit) and the blocks and the extra parts are
// claimed by the cores in turn. A product's After runs on each of its
// blocks once the block is written, by the part that wrote it. When no
// product is large enough to be cut and there is at most one extra
// part, all of it runs on the caller, in turn. Nothing a product or an extra part writes
// may be read or written by another. It panics when a product's slices
// are too short for its shape. It keeps no reference to ps, so a caller's
// array of products can stay on its stack.
func (e *Kernel) SgemmMany(ps []Product, extraParts int, extra func(int)) {
	if len(ps) > maxMany {
		panic("tensor: SgemmMany given more than four products")
	}
	r := manyRuns.Get().(*manyRun)
	r.e, r.n, r.extra = e, len(ps), extra
	total, split := 0, false
	for i := range ps {
		p := &ps[i]
		ar, ac := p.M, p.K
		if p.TransA {
			ar, ac = p.K, p.M
		}
		br, bc := p.K, p.N
		if p.TransB {
			br, bc = p.N, p.K
		}
		checkOperand("A", ar, ac, p.A, p.Lda)
		checkOperand("B", br, bc, p.B, p.Ldb)
		checkOperand("C", p.M, p.N, p.C, p.Ldc)
		r.ps[i] = *p
		if p.M == 0 || p.N == 0 {
			continue
		}
		r.pr[i], r.pc[i] = e.cut(p.M, p.N, p.K, p.Alpha)
		total += r.pr[i] * r.pc[i]
		split = split || r.pr[i]*r.pc[i] > 1
	}
	if extraParts <= 1 && !split {
		// No product large enough to cut (a wide linear part's weight
		// gradient and its bias sum): handing one of them to another
		// core costs more than computing it here.
		for q := range total + extraParts {
			r.run(q)
		}
	} else {
		par.Do(total+extraParts, r.part)
	}
	r.release()
}
