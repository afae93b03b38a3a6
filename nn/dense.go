package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// Init names a weight initialisation scheme for [NewDense].
type Init int

const (
	// HeNormal draws W from N(0, 2/in): the usual choice before a ReLU.
	HeNormal Init = iota
	// GlorotUniform draws W from U(−a, a) with a = sqrt(6/(in+out)):
	// Keras' default, used for layers not followed by a ReLU (the logit).
	GlorotUniform
)

// Dense is a fully connected layer y = x·W + b with W in×out and b 1×out.
type Dense struct {
	W, B   *tensor.Matrix
	dW, dB *tensor.Matrix
	// SkipInputGrad makes Backward skip ∂L/∂x (it returns nil), for a
	// first layer whose input is raw data.
	SkipInputGrad bool

	params []*Param
	x      *tensor.Matrix // input of the last Forward (not owned)
	y      tensor.Matrix
	dx     tensor.Matrix
	dxAud  tensor.Matrix
	// back holds DenseReLUBackward's products (no slice built per call).
	back [2]tensor.Product
}

// NewDense returns an in×out layer with weights drawn from rng by init and
// zero biases.
func NewDense(in, out int, init Init, rng *rand.Rand) *Dense {
	if in <= 0 || out <= 0 {
		panic(fmt.Sprintf("nn: Dense shape %d×%d must be positive", in, out))
	}
	d := &Dense{W: tensor.New(in, out), B: tensor.New(1, out), dW: tensor.New(in, out), dB: tensor.New(1, out)}
	switch init {
	case HeNormal:
		s := math.Sqrt(2 / float64(in))
		for i := range d.W.Data {
			d.W.Data[i] = float32(rng.NormFloat64() * s)
		}
	case GlorotUniform:
		a := math.Sqrt(6 / float64(in+out))
		for i := range d.W.Data {
			d.W.Data[i] = float32((2*rng.Float64() - 1) * a)
		}
	default:
		panic(fmt.Sprintf("nn: unknown Init %d", init))
	}
	d.params = []*Param{{Name: "dense.W", W: d.W, G: d.dW}, {Name: "dense.b", W: d.B, G: d.dB}}
	return d
}

// In returns the input width.
func (d *Dense) In() int { return d.W.Rows }

// Out returns the output width.
func (d *Dense) Out() int { return d.W.Cols }

// Forward implements Layer.
func (d *Dense) Forward(x *tensor.Matrix) *tensor.Matrix {
	if x.Cols != d.W.Rows {
		panic(fmt.Sprintf("nn: Dense %d×%d given input with %d columns", d.W.Rows, d.W.Cols, x.Cols))
	}
	d.x = x
	tensor.MatMulBias(&d.y, x, false, d.W, false, d.B.Data, nil)
	return &d.y
}

// Backward implements Layer: dW = xᵀ·dy, db = Σ_rows dy, dx = dy·Wᵀ,
// in one parallel region (the products' parts and the column sums',
// tensor.MatMulMany), each as MatMul and ColSums compute it alone.
func (d *Dense) Backward(dy *tensor.Matrix) *tensor.Matrix {
	d.checkDy(dy)
	return d.backward(dy, nil)
}

// backward computes the gradients of Backward from dy, already checked:
// the weight gradient xᵀ·dy, the bias gradient's column sums and the
// input gradient dy·Wᵀ (unless SkipInputGrad; after, when set, runs on
// each of its blocks as tensor.Product's After) in one parallel region.
// It returns the input gradient, or nil with SkipInputGrad.
func (d *Dense) backward(dy *tensor.Matrix, after func(i0, i1, j0, j1 int)) *tensor.Matrix {
	n := 1
	d.back[0] = tensor.Product{C: d.dW, A: d.x, TransA: true, B: dy, Alpha: 1}
	if !d.SkipInputGrad {
		d.back[1] = tensor.Product{C: &d.dx, A: dy, B: d.W, TransB: true, Alpha: 1, After: after}
		n = 2
	}
	blocks, parts := colSumParts(dy)
	db := d.dB.Data
	tensor.MatMulMany(d.back[:n], max(parts, 1), func(p int) {
		if parts < 2 {
			vec.ColSums(db, dy.Data, dy.Rows, dy.Cols)
			return
		}
		j0, j1 := blocks*p/parts*64, min(blocks*(p+1)/parts*64, dy.Cols)
		vec.ColSums(db[j0:j1], dy.Data[j0:], dy.Rows, dy.Cols)
	})
	d.back = [2]tensor.Product{} // keep no reference to dy or x
	if d.SkipInputGrad {
		return nil
	}
	return &d.dx
}

// InputGrad implements InputGrader.
func (d *Dense) InputGrad(dy *tensor.Matrix) *tensor.Matrix {
	d.checkDy(dy)
	tensor.MatMul(&d.dxAud, dy, false, d.W, true, 1, 0)
	return &d.dxAud
}

func (d *Dense) checkDy(dy *tensor.Matrix) {
	if d.x == nil || dy.Rows != d.x.Rows || dy.Cols != d.W.Cols {
		rows := -1
		if d.x != nil {
			rows = d.x.Rows
		}
		panic(fmt.Sprintf("nn: Dense %d×%d Backward given %d×%d gradient after a forward of %d rows", d.W.Rows, d.W.Cols, dy.Rows, dy.Cols, rows))
	}
}

// Params implements Layer: W then b.
func (d *Dense) Params() []*Param { return d.params }

// ColSums sets dst[j] = Σ_i m[i][j]; len(dst) must be m.Cols.
func ColSums(dst []float32, m *tensor.Matrix) {
	if len(dst) != m.Cols {
		panic(fmt.Sprintf("nn: ColSums into %d values for %d columns", len(dst), m.Cols))
	}
	// Each column is summed over the rows in order whichever part has it,
	// so the columns can be cut into blocks of 64 (four cache lines)
	// on several cores without changing a bit.
	blocks, parts := colSumParts(m)
	if parts < 2 {
		vec.ColSums(dst, m.Data, m.Rows, m.Cols)
		return
	}
	par.Do(parts, func(p int) {
		j0, j1 := blocks*p/parts*64, min(blocks*(p+1)/parts*64, m.Cols)
		vec.ColSums(dst[j0:j1], m.Data[j0:], m.Rows, m.Cols)
	})
}

// colSumParts returns how ColSums cuts m's columns: into parts ranges of
// whole blocks of 64 columns (blocks of them in all), one per core at
// most and each of at least spreadGrain values (below 2: not cut).
func colSumParts(m *tensor.Matrix) (blocks, parts int) {
	blocks = (m.Cols + 63) / 64
	return blocks, min(blocks, m.Rows*m.Cols/spreadGrain, runtime.GOMAXPROCS(0))
}
