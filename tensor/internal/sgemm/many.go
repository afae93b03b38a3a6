package sgemm

import "github.com/splitguard/splitguard/internal/par"

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
}

// maxMany is the most products one SgemmMany takes.
const maxMany = 4

// SgemmMany computes up to four independent products and runs
// extra(0), …, extra(extraParts−1) beside them, all in one parallel
// region: each product is cut into the same blocks as by Sgemm (so its
// result is the same bit for bit) and the blocks and the extra parts are
// claimed by the cores in turn. Nothing a product or an extra part writes
// may be read or written by another. It panics when a product's slices
// are too short for its shape.
func (e *Kernel) SgemmMany(ps []Product, extraParts int, extra func(int)) {
	if len(ps) > maxMany {
		panic("tensor: SgemmMany given more than four products")
	}
	var pr, pc [maxMany]int
	total := 0
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
		if p.M == 0 || p.N == 0 {
			continue
		}
		pr[i], pc[i] = e.cut(p.M, p.N, p.K, p.Alpha)
		total += pr[i] * pc[i]
	}
	par.Do(total+extraParts, func(q int) {
		for i := range ps {
			if n := pr[i] * pc[i]; q >= n {
				q -= n
				continue
			}
			p := &ps[i]
			e.block(p.TransA, p.TransB, p.M, p.N, p.K, p.Alpha, p.A, p.Lda, p.B, p.Ldb, p.Beta, p.C, p.Ldc, pr[i], pc[i], q, nil, nil)
			return
		}
		extra(q)
	})
}
