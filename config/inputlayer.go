package config

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// withInputLayer puts the input-layer defence that the configuration
// turns on (MID) in front of top, or returns top unchanged without one.
func (c *Config) withInputLayer(top model.Top) (model.Top, error) {
	r := *c
	r.Layers = slices.Clone(c.Layers)
	r.Resolve()
	in, err := protect.BuildInput(c.Params, protect.InputOptions{CutDim: r.CutDim(), LR: float32(r.LR), Seed: c.Seed, Secret: c.PartySecret})
	if err != nil {
		return nil, err
	}
	if in != nil {
		top = &InputTop{Top: top, In: in}
	}
	codec, err := protect.BuildCodec(c.Params, c.Seed)
	if err != nil {
		return nil, err
	}
	if codec != nil {
		top = &CodecTop{Top: top, Codec: codec}
	}
	return top, nil
}

// CodecTop is a top model trained on encoded labels (CAE): in training
// mode its logits are the raw ones, which the loss compares with the
// encoded targets; at evaluation and inference each logit l becomes
// logit(Decode(σ(l))), the decoded probability of the true positive class.
type CodecTop struct {
	model.Top
	Codec    protect.LabelCodec
	training bool
	out      []float32
}

// SetTraining selects raw (training) or decoded logits, and passes the
// mode on to the top it wraps.
func (t *CodecTop) SetTraining(on bool) {
	t.training = on
	setTraining(t.Top, on)
}

// Unwrap returns the top the codec trains behind it.
func (t *CodecTop) Unwrap() model.Top { return t.Top }

// MixTargets passes the targets to the top it wraps (see InputTop).
func (t *CodecTop) MixTargets(y []float32) []float32 { return mixTargets(t.Top, y) }

// setTraining passes the training mode on to top where it has one (a
// wrapper's inner top).
func setTraining(top model.Top, on bool) {
	if m, ok := top.(interface{ SetTraining(bool) }); ok {
		m.SetTraining(on)
	}
}

// mixTargets returns the targets top trains on for y: its mixed ones
// where it mixes them (mixup), else y.
func mixTargets(top model.Top, y []float32) []float32 {
	if m, ok := top.(protect.TargetMixer); ok {
		return m.MixTargets(y)
	}
	return y
}

// Forward implements model.Top.
func (t *CodecTop) Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error) {
	logits, err := t.Top.Forward(e, wide)
	if err != nil || t.training {
		return logits, err
	}
	t.out = append(t.out[:0], logits...)
	for i, l := range t.out {
		p := 1 / (1 + math.Exp(-float64(l)))
		q := math.Min(math.Max(t.Codec.Decode(p), 1e-7), 1-1e-7)
		t.out[i] = float32(math.Log(q / (1 - q)))
	}
	return t.out, nil
}

// InputTop is a top model behind an input-layer defence: the layer maps
// the cut embedding to the top's input, is trained with it, and is saved
// and loaded with it (top.model holds both). It samples in training mode
// only, which the active party sets around each training step
// (SetTraining); evaluation and inference run in the default mode.
type InputTop struct {
	model.Top
	In       protect.InputLayer
	training bool
}

// Unwrap returns the top the input layer feeds.
func (t *InputTop) Unwrap() model.Top { return t.Top }

// SetTraining selects the training behaviour of the input layer.
func (t *InputTop) SetTraining(on bool) { t.training = on }

// MixTargets gives the training targets of the last training Forward's
// rows when the input layer mixes them (mixup), else y unchanged.
func (t *InputTop) MixTargets(y []float32) []float32 {
	if m, ok := t.In.(protect.TargetMixer); ok {
		return m.MixTargets(y)
	}
	return y
}

// Forward implements model.Top.
func (t *InputTop) Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error) {
	x, err := t.In.Forward(e, t.training)
	if err != nil {
		return nil, err
	}
	return t.Top.Forward(x, wide)
}

// Backward implements model.Top: through the top, then the input layer
// (which adds its regulariser's gradient).
func (t *InputTop) Backward(dLogits []float32) (*tensor.Matrix, error) {
	g, err := t.Top.Backward(dLogits)
	if err != nil {
		return nil, err
	}
	return t.In.Backward(g)
}

// Step implements model.Top.
func (t *InputTop) Step() error {
	if err := t.Top.Step(); err != nil {
		return err
	}
	return t.In.Step()
}

// Save implements model.Top: the top's checkpoint (length-prefixed), then
// the input layer's state.
func (t *InputTop) Save(w io.Writer) error {
	return saveFramed(w, nil, t.Top.Save, t.In.Save)
}

// saveFramed writes head, then what inner saves prefixed with its length
// (8 bytes, little-endian), then what tail saves: a model checkpoint
// followed by the state of the defence layer wrapped around it.
func saveFramed(w io.Writer, head []byte, inner, tail func(io.Writer) error) error {
	var b bytes.Buffer
	if err := inner(&b); err != nil {
		return err
	}
	head = binary.LittleEndian.AppendUint64(head, uint64(b.Len()))
	if _, err := w.Write(head); err != nil {
		return err
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return err
	}
	return tail(w)
}

// splitFramed splits what saveFramed wrote after its head into the inner
// checkpoint and the rest; ok is false when the length prefix is missing
// or runs past the end, n and left being the length read and the bytes
// after it, for the error.
func splitFramed(raw []byte) (inner, rest []byte, ok bool, n, left uint64) {
	if len(raw) < 8 {
		return nil, nil, false, 0, 0
	}
	n, left = binary.LittleEndian.Uint64(raw), uint64(len(raw)-8)
	if n > left {
		return nil, nil, false, n, left
	}
	return raw[8 : 8+n], raw[8+n:], true, n, left
}

// Load implements model.Top.
func (t *InputTop) Load(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(raw) < 8 {
		return errors.New("model: loading top checkpoint: truncated (a top model behind " + t.In.Name() + ")")
	}
	inner, rest, ok, n, left := splitFramed(raw)
	if !ok {
		return fmt.Errorf("model: loading top checkpoint: a top of %d bytes overruns the %d left (a checkpoint without %s?)", n, left, t.In.Name())
	}
	if err := t.Top.Load(bytes.NewReader(inner)); err != nil {
		return err
	}
	return t.In.Load(bytes.NewReader(rest))
}
