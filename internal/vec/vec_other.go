//go:build !amd64

package vec

const hasAVX2 = false

func anyNonFiniteAsm(x *float32, n int) bool { panic("vec: no assembly on this architecture") }
func reluAsm(y, x *float32, n int)           { panic("vec: no assembly on this architecture") }
func reluGradAsm(dx, dy, y *float32, n int)  { panic("vec: no assembly on this architecture") }
func adamAsm(w, g, m, v *float32, n int, c *adamConsts) {
	panic("vec: no assembly on this architecture")
}
func sumRows64Asm(dst, m *float32, rows, stride int) { panic("vec: no assembly on this architecture") }
func sumRows8Asm(dst, m *float32, rows, stride int)  { panic("vec: no assembly on this architecture") }

func adamRowsAsm(store *float32, stride int, rows *int32, n int, grad *float32, d int, c *adamConsts, l2 int) {
	panic("vec: no assembly on this architecture")
}

func prefetchRowsAsm(store *float32, stride int, rows *int32, n int) {
	panic("vec: no assembly on this architecture")
}

func prefetchKeysAsm(store *float32, stride int, keys *uint64, n int, off int) {
	panic("vec: no assembly on this architecture")
}

func addAsm(dst, src *float32, n int) { panic("vec: no assembly on this architecture") }

func maxPoolRowAsm(y *float32, arg *int32, top, bottom *float32, ow, c, base, wc int) {
	panic("vec: no assembly on this architecture")
}

func sumSquares8Asm(dst *float64, m *float32, stride, n int) {
	panic("vec: no assembly on this architecture")
}
