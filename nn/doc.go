// Package nn holds splitguard's neural-network layers with hand-written
// forward and backward passes over [tensor.Matrix] (float32, row-major):
// Dense, ReLU, Embedding, Conv2D, MaxPool2D, Flatten, the sigmoid
// cross-entropy loss and the optimisers Adam and LazyAdam.
// Every matrix product runs through [tensor.MatMul], so the engine chosen
// at start (splitguard's own AVX-512/AVX2 kernels, gonum elsewhere, or
// OpenBLAS with the openblas build tag) serves all of them; the layers'
// element-wise loops run on internal/vec.
//
// Conventions shared by every layer:
//
//   - A batch is B rows; a layer's input and output are B×in and B×out.
//   - Forward returns a buffer owned by the layer, valid until the layer's
//     next Forward. Backward returns a buffer owned by the layer, valid
//     until its next Backward. Buffers are reused across calls, so a step
//     allocates nothing once the shapes have settled.
//   - Backward overwrites (does not accumulate) the parameter gradients
//     and uses the input remembered from the last Forward.
//   - Optimisers ([Adam], [LazyAdam]) read those gradients and update the
//     parameters in place.
package nn
