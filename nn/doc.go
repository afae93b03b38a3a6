// Package nn holds splitguard's neural-network layers with hand-written
// forward and backward passes over [tensor.Matrix] (float32, row-major).
// Every matrix product runs through [tensor.MatMul], so the engine chosen
// at build time (gonum or OpenBLAS) serves all of them.
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
