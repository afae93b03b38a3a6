package vec

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2

// The loops of vec_amd64.s; n is a positive multiple of 8.

//go:noescape
func anyNonFiniteAsm(x *float32, n int) bool

//go:noescape
func reluAsm(y, x *float32, n int)

//go:noescape
func reluGradAsm(dx, dy, y *float32, n int)

//go:noescape
func adamAsm(w, grad, m, v *float32, n int, c *adamConsts)

// sumRows64Asm adds rows rows of 64 floats, stride floats apart, into the
// 64 floats at dst; sumRows8Asm does the same for 8.
//
//go:noescape
func sumRows64Asm(dst, m *float32, rows, stride int)

//go:noescape
func sumRows8Asm(dst, m *float32, rows, stride int)

// adamRowsAsm is AdamRows, four lanes at a time and the last d mod 4
// floats one by one; with l2 ≠ 0 it is AdamRowsL2 (c.l2 the weights'
// factor).
//
//go:noescape
func adamRowsAsm(store *float32, stride int, rows *int32, n int, grad *float32, d int, c *adamConsts, l2 int)

//go:noescape
func prefetchRowsAsm(store *float32, stride int, rows *int32, n int)

//go:noescape
func prefetchKeysAsm(store *float32, stride int, keys *uint64, n int, off int)

//go:noescape
func addAsm(dst, src *float32, n int)

// maxPoolRowAsm is MaxPool2x2Row for c a multiple of 8: top and bottom
// point at x[top] and x[top+wc]; base is top.
//
//go:noescape
func maxPoolRowAsm(y *float32, arg *int32, top, bottom *float32, ow, c, base, wc int)

// sumSquares8Asm is SumSquares for eight rows of n columns, n a positive
// multiple of 4.
//
//go:noescape
func sumSquares8Asm(dst *float64, m *float32, stride, n int)
