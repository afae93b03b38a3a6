package tensor

import (
	"fmt"
	"strings"
)

// Engine computes single-precision general matrix products on row-major
// storage: C = alpha·op(A)·op(B) + beta·C, where op(X) is X or Xᵀ, op(A)
// is m×k, op(B) is k×n and C is m×n. lda, ldb and ldc are the row strides
// of the stored A, B and C. This is the only place where the project
// multiplies matrices, so swapping the implementation swaps them all.
type Engine interface {
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// Name says which implementation this is, for benchmarks and logs.
	Name() string
}

// Default is the engine used by MatMul: the fastest SIMDEngine the CPU
// runs (gonum's pure-Go BLAS where it runs none), or OpenBLAS when the
// binary was built with the `openblas` tag.
var Default Engine = defaultEngine()

// MatMul sets c = alpha·op(a)·op(b) + beta·c through Default, where op
// transposes its argument when the matching flag is set. With beta == 0,
// c is resized to the product's shape first (its old contents are
// ignored); with beta != 0, c must already have that shape.
func MatMul(c *Matrix, a *Matrix, transA bool, b *Matrix, transB bool, alpha, beta float32) {
	m, n, k := productShape(c, a, transA, b, transB, beta)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if beta == 0 {
			c.Zero()
		} else {
			for i := range c.Data {
				c.Data[i] *= beta
			}
		}
		return
	}
	Default.Sgemm(transA, transB, m, n, k, alpha, a.Data, max(a.Cols, 1), b.Data, max(b.Cols, 1), beta, c.Data, max(n, 1))
}

// productShape returns op(a)·op(b)'s m, n and k, after checking that
// the inner dimensions agree and that c has the product's shape (resizing
// it when beta is 0).
func productShape(c *Matrix, a *Matrix, transA bool, b *Matrix, transB bool, beta float32) (m, n, k int) {
	m, k = a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if transB {
		kb, n = n, kb
	}
	if k != kb {
		panic(fmt.Sprintf("tensor: MatMul inner dimensions differ: op(a) is %d×%d, op(b) is %d×%d", m, k, kb, n))
	}
	if beta == 0 {
		c.Resize(m, n)
	} else if c.Rows != m || c.Cols != n {
		panic(fmt.Sprintf("tensor: MatMul accumulates into %d×%d, product is %d×%d", c.Rows, c.Cols, m, n))
	}
	return m, n, k
}

// Engines lists the engines this binary can run on this CPU, Default
// first: the SIMD engine of every instruction set the CPU has (fastest
// first), gonum, and OpenBLAS in the `openblas` build.
func Engines() []Engine {
	es := []Engine{Default}
	add := func(e Engine) {
		for _, have := range es {
			if have.Name() == e.Name() {
				return
			}
		}
		es = append(es, e)
	}
	for _, e := range simdEngines() {
		add(e)
	}
	add(GonumEngine{})
	return es
}

// EngineByName returns the engine of Engines called name.
func EngineByName(name string) (Engine, error) {
	var names []string
	for _, e := range Engines() {
		if e.Name() == name {
			return e, nil
		}
		names = append(names, e.Name())
	}
	return nil, fmt.Errorf("tensor: no engine %q on this machine (available: %s)", name, strings.Join(names, ", "))
}
