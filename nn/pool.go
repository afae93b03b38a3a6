package nn

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// MaxPool2D is 2×2 max pooling with stride 2 on NHWC image rows (see
// [Conv2D] for the layout): a B×(H·W·C) input gives a B×(H/2·W/2·C)
// output, the divisions rounding down as in Keras' 'valid' padding, so the
// last row or column of an odd-sized image is dropped (it gets a zero
// gradient). Each output remembers where its maximum came from; Backward
// routes the gradient there. Among equal values the first in the window's
// row-major order wins.
type MaxPool2D struct {
	H, W, C int

	arg   []int32        // per output element: index of the maximum in its input row
	in    *tensor.Matrix // the last Forward's input (MaxPool2DBackwardReLU checks it)
	y     tensor.Matrix
	dx    tensor.Matrix
	dxAud tensor.Matrix
	rows  int
}

// NewMaxPool2D returns 2×2 max pooling of h×w×c images.
func NewMaxPool2D(h, w, c int) *MaxPool2D {
	if h < 2 || w < 2 || c <= 0 {
		panic(fmt.Sprintf("nn: MaxPool2D on %d×%d×%d images: need at least 2×2 and one channel", h, w, c))
	}
	return &MaxPool2D{H: h, W: w, C: c}
}

// OutH returns the output height ⌊H/2⌋.
func (p *MaxPool2D) OutH() int { return p.H / 2 }

// OutW returns the output width ⌊W/2⌋.
func (p *MaxPool2D) OutW() int { return p.W / 2 }

// In returns the input width H·W·C.
func (p *MaxPool2D) In() int { return p.H * p.W * p.C }

// Out returns the output width ⌊H/2⌋·⌊W/2⌋·C.
func (p *MaxPool2D) Out() int { return p.OutH() * p.OutW() * p.C }

// Params implements Layer; pooling has none.
func (p *MaxPool2D) Params() []*Param { return nil }

// Forward implements Layer.
func (p *MaxPool2D) Forward(x *tensor.Matrix) *tensor.Matrix {
	if x.Cols != p.In() {
		panic(fmt.Sprintf("nn: MaxPool2D on %d×%d×%d images given input with %d columns, want %d", p.H, p.W, p.C, x.Cols, p.In()))
	}
	B, out := x.Rows, p.Out()
	p.in = x
	p.y.Resize(B, out)
	if cap(p.arg) < B*out {
		p.arg = make([]int32, B*out)
	}
	p.arg = p.arg[:B*out]
	p.rows = B
	// Images on the cores in ranges (spreadRows): each image's windows
	// are its own. The closure only where there are parts to spread.
	if spreadRowParts(B, p.In()) < 2 {
		p.forwardImages(x, 0, B)
	} else {
		spreadRows(B, p.In(), func(b0, b1 int) { p.forwardImages(x, b0, b1) })
	}
	return &p.y
}

// forwardImages pools images [b0, b1) of x into p.y and p.arg.
func (p *MaxPool2D) forwardImages(x *tensor.Matrix, b0, b1 int) {
	W, C, oh, ow, out := p.W, p.C, p.OutH(), p.OutW(), p.Out()
	for b := b0; b < b1; b++ {
		xi := x.Row(b)
		yi := p.y.Row(b)
		ai := p.arg[b*out : (b+1)*out]
		for r := range oh {
			// Output row r: the strict > of each window's inputs in
			// order (top-left, top-right, bottom-left, bottom-right), in
			// internal/vec (eight channels at a time with AVX2).
			vec.MaxPool2x2Row(yi[r*ow*C:(r+1)*ow*C], ai[r*ow*C:(r+1)*ow*C], xi, 2*r*W*C, W*C, C, ow)
		}
	}
}

// Backward implements Layer: each output's gradient goes to the input
// element that was its maximum; every other input gets 0.
func (p *MaxPool2D) Backward(dy *tensor.Matrix) *tensor.Matrix {
	p.route(dy, &p.dx)
	return &p.dx
}

// InputGrad implements InputGrader.
func (p *MaxPool2D) InputGrad(dy *tensor.Matrix) *tensor.Matrix {
	p.route(dy, &p.dxAud)
	return &p.dxAud
}

func (p *MaxPool2D) checkDy(dy *tensor.Matrix) {
	if p.rows == 0 || dy.Rows != p.rows || dy.Cols != p.Out() {
		panic(fmt.Sprintf("nn: MaxPool2D Backward given %d×%d gradient after a forward of %d rows (want %d columns)", dy.Rows, dy.Cols, p.rows, p.Out()))
	}
}

func (p *MaxPool2D) route(dy, dx *tensor.Matrix) {
	p.checkDy(dy)
	dx.Resize(dy.Rows, p.In())
	// Images on the cores in ranges, each image's row cleared and then
	// written by the part that routes it, while it is in that core's cache.
	if spreadRowParts(dy.Rows, p.In()) < 2 {
		p.routeImages(dy, dx, 0, dy.Rows)
		return
	}
	spreadRows(dy.Rows, p.In(), func(b0, b1 int) { p.routeImages(dy, dx, b0, b1) })
}

// routeImages routes images [b0, b1) of dy into dx.
func (p *MaxPool2D) routeImages(dy, dx *tensor.Matrix, b0, b1 int) {
	out := p.Out()
	for b := b0; b < b1; b++ {
		g := dy.Row(b)
		d := dx.Row(b)
		clear(d)
		for o, at := range p.arg[b*out : (b+1)*out] {
			d[at] = g[o] // windows do not overlap: one writer per element
		}
	}
}

// MaxPool2DBackwardReLU runs r.Backward(p.Backward(dy)), where p pooled
// r's output (p.Forward was given r's output, as in a convolution block),
// in one pass over each image instead of three (clearing, routing, the
// ReLU's mask): the gradient p routes to an input element passes r's
// backward there and then, and every other element gets +0, which r's
// backward would leave +0. It returns r's input gradient, the same bit
// for bit as the two calls; p's own input gradient is not kept.
func MaxPool2DBackwardReLU(p *MaxPool2D, r *ReLU, dy *tensor.Matrix) *tensor.Matrix {
	p.checkDy(dy)
	if p.in != &r.y {
		panic("nn: MaxPool2DBackwardReLU needs a MaxPool2D whose input was the ReLU's output")
	}
	r.dx.Resize(dy.Rows, p.In())
	if spreadRowParts(dy.Rows, p.In()) < 2 {
		p.routeReLUImages(dy, r, 0, dy.Rows)
	} else {
		spreadRows(dy.Rows, p.In(), func(b0, b1 int) { p.routeReLUImages(dy, r, b0, b1) })
	}
	return &r.dx
}

// routeReLUImages is MaxPool2DBackwardReLU for images [b0, b1): each
// routed gradient keeps its bits where the ReLU's output was positive (its
// bits, read as an int32, positive) and becomes +0 elsewhere, as
// vec.ReluGrad masks it.
func (p *MaxPool2D) routeReLUImages(dy *tensor.Matrix, r *ReLU, b0, b1 int) {
	out := p.Out()
	for b := b0; b < b1; b++ {
		g := dy.Row(b)
		d := r.dx.Row(b)
		y := r.y.Row(b)
		clear(d)
		for o, at := range p.arg[b*out : (b+1)*out] {
			m := uint32(-int32(math.Float32bits(y[at])) >> 31)
			d[at] = math.Float32frombits(math.Float32bits(g[o]) & m)
		}
	}
}
