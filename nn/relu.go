package nn

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// ReLU is y = max(x, 0), element by element. Both passes are branchless
// (sign-bit masks): a data-dependent branch here mispredicts on about half
// the elements and cost milliseconds per step (docs/PERFORMANCE.md, "Before the project").
// Its derivative at 0 is taken as 0, as PyTorch and TensorFlow do.
type ReLU struct {
	y     tensor.Matrix
	dx    tensor.Matrix
	dxAud tensor.Matrix
}

// Forward implements Layer.
func (r *ReLU) Forward(x *tensor.Matrix) *tensor.Matrix {
	r.y.Resize(x.Rows, x.Cols)
	reluForward(r.y.Data, x.Data)
	return &r.y
}

// Backward implements Layer: dx = dy where the output was positive, else 0.
func (r *ReLU) Backward(dy *tensor.Matrix) *tensor.Matrix {
	r.check(dy)
	r.dx.Resize(dy.Rows, dy.Cols)
	reluBackward(r.dx.Data, dy.Data, r.y.Data)
	return &r.dx
}

// InputGrad implements InputGrader.
func (r *ReLU) InputGrad(dy *tensor.Matrix) *tensor.Matrix {
	r.check(dy)
	r.dxAud.Resize(dy.Rows, dy.Cols)
	reluBackward(r.dxAud.Data, dy.Data, r.y.Data)
	return &r.dxAud
}

func (r *ReLU) check(dy *tensor.Matrix) {
	if !tensor.SameShape(dy, &r.y) {
		panic(fmt.Sprintf("nn: ReLU Backward given %d×%d gradient for a %d×%d output", dy.Rows, dy.Cols, r.y.Rows, r.y.Cols))
	}
}

// Params implements Layer; ReLU has none.
func (r *ReLU) Params() []*Param { return nil }

// Output returns the output of the last Forward.
func (r *ReLU) Output() *tensor.Matrix { return &r.y }

// reluForward sets y = max(x, 0): the arithmetic shift of the sign bit
// gives an all-ones mask for negative x (including −0), which clears it
// (eight lanes at a time where the CPU has AVX2; internal/vec), over
// ranges of elements on several cores when the matrix is large (spread).
func reluForward(y, x []float32) {
	if spreadParts(len(y)) < 2 {
		vec.Relu(y, x)
		return
	}
	spread(len(y), func(lo, hi int) { vec.Relu(y[lo:hi], x[lo:hi]) })
}

// reluBackward sets dx = dy where y > 0, else 0. y comes from reluForward,
// so its bits read as a non-negative int32 that is 0 exactly when y == 0;
// negating it sets the sign bit exactly when y > 0.
func reluBackward(dx, dy, y []float32) {
	if spreadParts(len(dx)) < 2 {
		vec.ReluGrad(dx, dy, y)
		return
	}
	spread(len(dx), func(lo, hi int) { vec.ReluGrad(dx[lo:hi], dy[lo:hi], y[lo:hi]) })
}
