package tensor

import (
	"fmt"
	"math"
	"runtime"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/internal/vec"
)

// Matrix is a dense float32 matrix stored row-major: element (i, j) is
// Data[i*Cols+j]. The zero value is an empty 0×0 matrix.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// New returns a zeroed r×c matrix.
func New(r, c int) *Matrix {
	if r < 0 || c < 0 {
		panic(fmt.Sprintf("tensor: negative shape %d×%d", r, c))
	}
	return &Matrix{Rows: r, Cols: c, Data: make([]float32, r*c)}
}

// FromSlice wraps data (not copied) as an r×c matrix.
func FromSlice(r, c int, data []float32) *Matrix {
	if len(data) != r*c {
		panic(fmt.Sprintf("tensor: %d values for a %d×%d matrix", len(data), r, c))
	}
	return &Matrix{Rows: r, Cols: c, Data: data}
}

// Resize gives m the shape r×c, reusing its storage when it is large
// enough. The contents are unspecified afterwards; call Zero if needed.
// It returns m so that a nil receiver can be grown in one expression:
// buf = buf.Resize(r, c) allocates when buf is nil.
func (m *Matrix) Resize(r, c int) *Matrix {
	if m == nil {
		return New(r, c)
	}
	n := r * c
	if cap(m.Data) < n {
		m.Data = make([]float32, n)
	} else {
		m.Data = m.Data[:n]
	}
	m.Rows, m.Cols = r, c
	return m
}

// Row returns row i as a slice sharing m's storage.
func (m *Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols] }

// At returns element (i, j).
func (m *Matrix) At(i, j int) float32 { return m.Data[i*m.Cols+j] }

// Set sets element (i, j).
func (m *Matrix) Set(i, j int, v float32) { m.Data[i*m.Cols+j] = v }

// Zero sets every element to 0.
func (m *Matrix) Zero() { clear(m.Data) }

// Clone returns a deep copy of m.
func (m *Matrix) Clone() *Matrix {
	c := New(m.Rows, m.Cols)
	copy(c.Data, m.Data)
	return c
}

// CopyFrom resizes m to src's shape and copies src's values into it.
func (m *Matrix) CopyFrom(src *Matrix) {
	m.Resize(src.Rows, src.Cols)
	copy(m.Data, src.Data)
}

// SameShape reports whether a and b have the same shape.
func SameShape(a, b *Matrix) bool { return a.Rows == b.Rows && a.Cols == b.Cols }

// NotFiniteError reports the first NaN or ±Inf found in a tensor.
type NotFiniteError struct {
	Name     string // what the tensor is, e.g. "cut-layer gradient"
	Row, Col int
	Value    float32
}

func (e *NotFiniteError) Error() string {
	return fmt.Sprintf("%s: non-finite value %v at row %d, column %d", e.Name, e.Value, e.Row, e.Col)
}

// CheckFinite returns a *NotFiniteError naming the first NaN or ±Inf in
// m, or nil when every value is finite.
func CheckFinite(name string, m *Matrix) error {
	if k := firstNonFinite(m.Data); k >= 0 {
		return &NotFiniteError{Name: name, Row: k / max(m.Cols, 1), Col: k % max(m.Cols, 1), Value: m.Data[k]}
	}
	return nil
}

// checkGrain is the fewest values one core checks in firstNonFinite.
const checkGrain = 1 << 16

// firstNonFinite is vec.FirstNonFinite, over ranges of x on several cores
// when x is long (a cut gradient at batch 8192): the first index wins, so
// the answer does not depend on the cut.
func firstNonFinite(x []float32) int {
	parts := min(runtime.GOMAXPROCS(0), len(x)/checkGrain)
	if parts < 2 {
		return vec.FirstNonFinite(x)
	}
	first := make([]int, parts)
	par.Do(parts, func(p int) {
		lo, hi := len(x)*p/parts, len(x)*(p+1)/parts
		first[p] = -1
		if k := vec.FirstNonFinite(x[lo:hi]); k >= 0 {
			first[p] = lo + k
		}
	})
	for _, k := range first {
		if k >= 0 {
			return k
		}
	}
	return -1
}

// CheckFiniteSlice is CheckFinite for a vector.
func CheckFiniteSlice(name string, v []float32) error {
	return CheckFinite(name, &Matrix{Rows: 1, Cols: len(v), Data: v})
}

// RowNorms writes the Euclidean norm of every row of m into dst
// (len(dst) must be m.Rows), accumulating each row's squares in float64
// in column order (internal/vec, eight rows at a time where the CPU has
// AVX2, bit for bit the row-by-row loop).
func RowNorms(dst []float64, m *Matrix) {
	dst = dst[:m.Rows]
	vec.SumSquares(dst, m.Data, m.Cols, m.Cols)
	for i, s := range dst {
		dst[i] = math.Sqrt(s)
	}
}
