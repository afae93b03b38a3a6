package nn

import (
	"fmt"

	"github.com/splitguard/splitguard/tensor"
)

// Flatten marks the point where a network stops treating rows as images
// and starts treating them as feature vectors. Images are already stored
// as flat NHWC rows (B×(H·W·C), channel fastest, see [Conv2D]), which is
// exactly Keras' Flatten order for channels-last tensors, so Flatten is
// the identity on both passes: Forward returns its input and Backward its
// gradient, without copying. It only checks the width.
type Flatten struct {
	H, W, C int
}

// Width returns H·W·C, the width of its input and output.
func (f *Flatten) Width() int { return f.H * f.W * f.C }

// Forward implements Layer; it returns x itself.
func (f *Flatten) Forward(x *tensor.Matrix) *tensor.Matrix {
	if x.Cols != f.Width() {
		panic(fmt.Sprintf("nn: Flatten of %d×%d×%d images given input with %d columns", f.H, f.W, f.C, x.Cols))
	}
	return x
}

// Backward implements Layer; it returns dy itself.
func (f *Flatten) Backward(dy *tensor.Matrix) *tensor.Matrix {
	if dy.Cols != f.Width() {
		panic(fmt.Sprintf("nn: Flatten of %d×%d×%d images given a gradient with %d columns", f.H, f.W, f.C, dy.Cols))
	}
	return dy
}

// InputGrad implements InputGrader; it returns dy itself.
func (f *Flatten) InputGrad(dy *tensor.Matrix) *tensor.Matrix { return f.Backward(dy) }

// Params implements Layer; Flatten has none.
func (f *Flatten) Params() []*Param { return nil }
