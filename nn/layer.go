package nn

import "github.com/splitguard/splitguard/tensor"

// Param is one trainable tensor of a layer with its gradient, which the
// layer's Backward overwrites.
type Param struct {
	Name string         // e.g. "dense.W"
	W    *tensor.Matrix // value
	G    *tensor.Matrix // gradient of the loss, same shape as W
}

// Layer is a differentiable map from a B×in matrix to a B×out matrix.
// Dense, ReLU and (later) Conv2D, MaxPool2D and Flatten implement it, and
// models chain them.
type Layer interface {
	// Forward computes the output for x and remembers what Backward needs.
	// x must stay unchanged until Backward has run.
	Forward(x *tensor.Matrix) *tensor.Matrix
	// Backward takes ∂L/∂output (same shape as the last output), sets the
	// parameter gradients, and returns ∂L/∂input.
	Backward(dy *tensor.Matrix) *tensor.Matrix
	// Params lists the trainable tensors (none for ReLU). The slice and
	// its elements are the layer's own; optimisers update W in place.
	Params() []*Param
}

// InputGrader is implemented by layers that can return ∂L/∂input without
// touching their parameter gradients. Models use it for an audit
// backward pass that must leave the training state alone.
type InputGrader interface {
	// InputGrad returns ∂L/∂input for dy at the input of the last Forward,
	// in a buffer separate from Backward's, valid until the next InputGrad.
	InputGrad(dy *tensor.Matrix) *tensor.Matrix
}
