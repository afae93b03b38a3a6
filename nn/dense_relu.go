package nn

import (
	"fmt"

	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// DenseReLU runs d.Forward(x) and then r.Forward on its output as one
// parallel region: each part of the product computes its block of r's
// output plus the bias (added as the tiles are stored,
// tensor.MatMulBias) and rectifies it there, on the core that computed
// the block. What the layers
// keep for Backward (d's input, r's output) is the same as from the two
// Forward calls, bit for bit; d's own output, which nothing reads after a
// ReLU, is not written (at batch 8,192 it would be 4 MB a layer of
// writes that no cache keeps). It returns r's output.
func DenseReLU(d *Dense, r *ReLU, x *tensor.Matrix) *tensor.Matrix {
	if x.Cols != d.W.Rows {
		panic(fmt.Sprintf("nn: Dense %d×%d given input with %d columns", d.W.Rows, d.W.Cols, x.Cols))
	}
	d.x = x
	out := d.W.Cols
	r.y.Resize(x.Rows, out)
	ry := r.y.Data
	tensor.MatMulBias(&r.y, x, false, d.W, false, d.B.Data,
		func(i0, i1, j0, j1 int) {
			if j0 == 0 && j1 == out {
				vec.Relu(ry[i0*out:i1*out], ry[i0*out:i1*out])
				return
			}
			for i := i0; i < i1; i++ {
				vec.Relu(ry[i*out+j0:i*out+j1], ry[i*out+j0:i*out+j1])
			}
		})
	return &r.y
}

// DenseReLUBackward runs d.Backward(r.Backward(dy)) in two parallel
// regions instead of four: the ReLU's pass, then the weight gradient
// xᵀ·g, the bias gradient's column sums and the input gradient g·Wᵀ
// together (tensor.MatMulMany), where g is the ReLU's output gradient.
// Every gradient is the same bit for bit; it returns d's input gradient
// (nil with SkipInputGrad).
func DenseReLUBackward(d *Dense, r *ReLU, dy *tensor.Matrix) *tensor.Matrix {
	g := r.Backward(dy)
	d.checkDy(g)
	return d.backward(g, nil)
}

// DenseBackwardReLU runs d.Backward(dy) and then prev.Backward on d's
// input gradient, where prev is the ReLU whose output d read (d's last
// Forward was given prev's output, as in DenseReLU(·, prev, ·) followed by
// d): each block of the input gradient dy·Wᵀ passes through prev's
// backward in the parallel part that computed it, while it is in that
// core's cache, instead of in a parallel region of its own. It returns d's
// input gradient dx and prev's input gradient g, the same bit for bit as
// from the two calls. d must compute its input gradient (no
// SkipInputGrad).
func DenseBackwardReLU(d *Dense, dy *tensor.Matrix, prev *ReLU) (dx, g *tensor.Matrix) {
	d.checkDy(dy)
	if d.SkipInputGrad || d.x != &prev.y {
		panic("nn: DenseBackwardReLU needs a Dense that computes its input gradient and whose input is the ReLU's output")
	}
	in := d.W.Rows
	prev.dx.Resize(dy.Rows, in)
	rdx, ry := prev.dx.Data, prev.y.Data
	dxs := &d.dx
	dx = d.backward(dy, func(i0, i1, j0, j1 int) {
		x := dxs.Data
		if j0 == 0 && j1 == in {
			vec.ReluGrad(rdx[i0*in:i1*in], x[i0*in:i1*in], ry[i0*in:i1*in])
			return
		}
		for i := i0; i < i1; i++ {
			vec.ReluGrad(rdx[i*in+j0:i*in+j1], x[i*in+j0:i*in+j1], ry[i*in+j0:i*in+j1])
		}
	})
	return dx, &prev.dx
}
