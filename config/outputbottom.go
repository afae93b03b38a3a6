package config

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// outputBottomTag versions OutputBottom's checkpoint encoding.
const outputBottomTag = "splitguard/output-bottom/v1"

// withPassiveOutput puts the passive-side defence that the configuration
// turns on (MID or FedPass at the passive party's output) behind bottom,
// or returns bottom unchanged without one.
func (c *Config) withPassiveOutput(bottom model.Bottom, denseFeatures int) (model.Bottom, error) {
	r := *c
	r.Layers = slices.Clone(c.Layers)
	r.Resolve()
	lr := float32(r.LR)
	if lr == 0 { // not yet chosen from the data: the bottom's own default
		lr = model.DefaultConfig().LR
	}
	out, err := protect.BuildPassiveOutput(c.Params, protect.InputOptions{CutDim: bottom.CutDim(), LR: lr, Seed: c.Seed, Secret: c.PartySecret,
		DenseFeatures: denseFeatures})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return bottom, nil
	}
	return &OutputBottom{Bottom: bottom, Out: out}, nil
}

// OutputBottom is a bottom model behind a layer at the passive party's
// output: the layer maps the bottom's cut embedding to the embedding sent,
// is trained with the bottom (its regulariser's gradient added to the
// gradient received) and is saved and loaded with it (bottom.model holds
// both). What is sent is the cut layer's output for the attacks and the
// records: Outputs and Backward report the layer's output and the gradient
// received in the cut's place. The layer samples in training mode only,
// which the passive party sets around each training step (SetTraining);
// evaluation, inference and the attacks on the trained model run in the
// default mode.
type OutputBottom struct {
	model.Bottom
	Out      protect.PassiveOutput
	training bool
	last     *tensor.Matrix // the output layer's output of the last Forward
	outs     []*tensor.Matrix
	grads    []*tensor.Matrix
	aud      []*tensor.Matrix
}

// SetTraining selects the training behaviour of the output layer.
func (b *OutputBottom) SetTraining(on bool) { b.training = on }

// Forward implements model.Bottom.
func (b *OutputBottom) Forward(in *data.Batch) (*tensor.Matrix, error) {
	e, err := b.Bottom.Forward(in)
	if err != nil {
		return nil, err
	}
	if fr, ok := b.Out.(protect.FeatureReader); ok {
		// NoPeek reads the raw features beside the embedding.
		numCat := 0
		if in.Rows > 0 {
			numCat = len(in.Cat) / in.Rows
		}
		fr.SetFeatures(in.Dense, in.Cat, numCat)
	}
	b.last, err = b.Out.Forward(e, b.training)
	return b.last, err
}

// Outputs implements model.Bottom: the bottom's layer outputs, the last
// (the cut) being what the output layer sends.
func (b *OutputBottom) Outputs() []*tensor.Matrix {
	b.outs = replaceLast(b.outs, b.Bottom.Outputs(), b.last)
	return b.outs
}

// Backward implements model.Bottom: through the output layer (which adds
// its regulariser's gradient), then the bottom.
func (b *OutputBottom) Backward(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	return b.through(gCut, b.Out.Backward, b.Bottom.Backward, &b.grads)
}

// Backprop implements model.Bottom.
func (b *OutputBottom) Backprop(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	return b.through(gCut, b.Out.Backprop, b.Bottom.Backprop, &b.aud)
}

// through backpropagates gCut by out, then by in, and returns in's
// gradients in dst with the last one (the cut's) replaced by gCut.
func (b *OutputBottom) through(gCut *tensor.Matrix, out func(*tensor.Matrix) (*tensor.Matrix, error),
	in func(*tensor.Matrix) ([]*tensor.Matrix, error), dst *[]*tensor.Matrix) ([]*tensor.Matrix, error) {
	g, err := out(gCut)
	if err != nil {
		return nil, err
	}
	grads, err := in(g)
	if err != nil {
		return nil, err
	}
	*dst = replaceLast(*dst, grads, gCut)
	return *dst, nil
}

// replaceLast copies src into dst with its last element replaced by last.
func replaceLast(dst, src []*tensor.Matrix, last *tensor.Matrix) []*tensor.Matrix {
	dst = append(dst[:0], src...)
	if n := len(dst); n > 0 {
		dst[n-1] = last
	}
	return dst
}

// Step implements model.Bottom.
func (b *OutputBottom) Step() error {
	if err := b.Bottom.Step(); err != nil {
		return err
	}
	return b.Out.Step()
}

// Save implements model.Bottom: a version tag, the bottom's checkpoint
// (length-prefixed), then the output layer's state.
func (b *OutputBottom) Save(w io.Writer) error {
	head := binary.LittleEndian.AppendUint32(nil, uint32(len(outputBottomTag)))
	head = append(head, outputBottomTag...)
	return saveFramed(w, head, b.Bottom.Save, b.Out.Save)
}

// Load implements model.Bottom.
func (b *OutputBottom) Load(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	name := b.Out.Name()
	n := len(outputBottomTag)
	if len(raw) < 4+n+8 || binary.LittleEndian.Uint32(raw) != uint32(n) || string(raw[4:4+n]) != outputBottomTag {
		return fmt.Errorf("model: loading bottom checkpoint: not a %s checkpoint (one without %s at the passive party's output?)", outputBottomTag, name)
	}
	inner, rest, ok, m, left := splitFramed(raw[4+n:])
	if !ok {
		return fmt.Errorf("model: loading bottom checkpoint: a bottom of %d bytes overruns the %d left", m, left)
	}
	if err := b.Bottom.Load(bytes.NewReader(inner)); err != nil {
		return err
	}
	if err := b.Out.Load(bytes.NewReader(rest)); err != nil {
		return fmt.Errorf("model: loading bottom checkpoint: %s at the passive party's output: %w", name, err)
	}
	return nil
}
