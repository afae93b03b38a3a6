package config

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// GatedTop is the active party's top behind the learned aggregation of K
// passive parties' embeddings (aggregation gated): the combined embedding
// [e₁ | … | e_K] (B×K·d, party 1's columns first, as fanin joins them)
// becomes Σ_k α_k·e_k with α = softmax(θ) ([nn.Gate]), the input of the
// top it wraps; θ is trained with the top (Adam, the top's learning rate)
// and saved and loaded with it (top.model holds both). Each party receives
// α_k times the gradient of the top's input, its own block of ∂L/∂e.
type GatedTop struct {
	model.Top
	Gate *nn.Gate
	opt  *nn.Adam
}

// gateMagic heads the gate's state in top.model.
const gateMagic = "splitguard-gate v1\n"

// NewGatedTop wraps top (whose input is d wide) in a gate over k parties'
// embeddings of width d each, learning at rate lr.
func NewGatedTop(top model.Top, k, d int, lr float32) (*GatedTop, error) {
	g, err := nn.NewGate(k, d)
	if err != nil {
		return nil, err
	}
	opt := nn.NewAdam(lr)
	opt.Init(g.Params())
	return &GatedTop{Top: top, Gate: g, opt: opt}, nil
}

// SetTraining passes the mode on to the top it wraps.
func (t *GatedTop) SetTraining(on bool) { setTraining(t.Top, on) }

// MixTargets passes the targets to the top it wraps (see InputTop).
func (t *GatedTop) MixTargets(y []float32) []float32 { return mixTargets(t.Top, y) }

// Forward implements model.Top.
func (t *GatedTop) Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error) {
	if e == nil || e.Cols != t.Gate.K*t.Gate.D {
		cols := -1
		if e != nil {
			cols = e.Cols
		}
		return nil, fmt.Errorf("model: gated aggregation: the combined embedding has %d columns, want %d parties × %d", cols, t.Gate.K, t.Gate.D)
	}
	return t.Top.Forward(t.Gate.Forward(e), wide)
}

// Backward implements model.Top: through the top, then the gate.
func (t *GatedTop) Backward(dLogits []float32) (*tensor.Matrix, error) {
	g, err := t.Top.Backward(dLogits)
	if err != nil {
		return nil, err
	}
	return t.Gate.Backward(g), nil
}

// Step implements model.Top.
func (t *GatedTop) Step() error {
	if err := t.Top.Step(); err != nil {
		return err
	}
	t.opt.Step(t.Gate.Params())
	return nil
}

// Save implements model.Top: the top's checkpoint (length-prefixed), then
// the gate: its magic line, K and d, θ, Adam's moments and step count.
func (t *GatedTop) Save(w io.Writer) error {
	return saveFramed(w, nil, t.Top.Save, t.saveGate)
}

func (t *GatedTop) saveGate(w io.Writer) error {
	b := []byte(gateMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Gate.K))
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Gate.D))
	for _, s := range [][]float32{t.Gate.Params()[0].W.Data, t.opt.M[0].Data, t.opt.V[0].Data} {
		for _, v := range s {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(t.opt.T))
	_, err := w.Write(b)
	return err
}

// Load implements model.Top; a checkpoint of another number of parties or
// width is refused.
func (t *GatedTop) Load(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	inner, rest, ok, n, left := splitFramed(raw)
	if !ok {
		return fmt.Errorf("model: loading top checkpoint: a top of %d bytes overruns the %d left (a checkpoint without the gated aggregation?)", n, left)
	}
	k := t.Gate.K
	want := len(gateMagic) + 8 + 3*4*k + 8
	if len(rest) != want || !bytes.HasPrefix(rest, []byte(gateMagic)) {
		return fmt.Errorf("model: loading top checkpoint: the gated aggregation's state is %d bytes, want %d (a checkpoint of another aggregation?)", len(rest), want)
	}
	p := rest[len(gateMagic):]
	gk, gd := int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:]))
	if gk != k || gd != t.Gate.D {
		return fmt.Errorf("model: loading top checkpoint: the gate combines %d parties of width %d, this model %d of width %d", gk, gd, k, t.Gate.D)
	}
	p = p[8:]
	if err := t.Top.Load(bytes.NewReader(inner)); err != nil {
		return err
	}
	for _, s := range [][]float32{t.Gate.Params()[0].W.Data, t.opt.M[0].Data, t.opt.V[0].Data} {
		for i := range s {
			s[i] = math.Float32frombits(binary.LittleEndian.Uint32(p))
			if math.IsNaN(float64(s[i])) || math.IsInf(float64(s[i]), 0) {
				return errors.New("model: loading top checkpoint: the gate's state holds a value that is not finite")
			}
			p = p[4:]
		}
	}
	t.opt.T = int64(binary.LittleEndian.Uint64(p))
	return nil
}
