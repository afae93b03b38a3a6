// Package model holds the split models: the passive party's [Bottom]
// (embeddings and the layers up to the cut) and the active party's [Top]
// (the rest of the network, the logit and, for Wide&Deep, the wide part).
//
// Both sides are built from [Config] and a [Schema] of their input
// columns; a config and seed give identical parameters and identical
// training. Inputs are validated at the boundary: a batch or gradient of
// the wrong shape, an id outside its vocabulary, or a NaN/Inf is an error
// naming what and where, never a panic inside a layer.
//
// Buffers follow ARCHITECTURE.md: whatever a method returns is owned by
// the model and valid until the model's next call of the same method.
package model

import (
	"fmt"
	"io"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// Bottom is the passive party's part of the model: e = f(X).
type Bottom interface {
	// Forward computes the cut embedding e (B×CutDim) of a batch.
	Forward(in *data.Batch) (*tensor.Matrix, error)
	// Outputs returns every passive layer's output of the last Forward,
	// first layer first; the last is the cut embedding.
	Outputs() []*tensor.Matrix
	// Backward backpropagates the gradient received at the cut, sets the
	// parameter gradients for Step, and returns ∂L/∂(each layer output),
	// the last being gCut itself.
	Backward(gCut *tensor.Matrix) ([]*tensor.Matrix, error)
	// Backprop returns the same activation gradients as Backward but
	// leaves parameter gradients and optimiser state alone (the audit's
	// oracle). Its buffers are separate from Backward's.
	Backprop(gCut *tensor.Matrix) ([]*tensor.Matrix, error)
	// Step applies the optimisers to the gradients of the last Backward.
	// It is an error to Step twice without a Backward in between.
	Step() error
	// CutDim is d, the width of the cut embedding.
	CutDim() int
	// Save writes parameters and optimiser state; Load restores them into
	// a model built with the same config and schema, after which training
	// continues bit-identically.
	Save(w io.Writer) error
	Load(r io.Reader) error
}

// Top is the active party's part of the model: logits = h(e) (+ wide).
type Top interface {
	// Forward computes one logit per row from the cut embedding e and,
	// for a model with a wide part, the active party's own features
	// (nil when the model has none).
	Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error)
	// Backward takes ∂L/∂logit (len B, already including the 1/B of a
	// mean loss), sets the parameter gradients, and returns ∂L/∂e (B×d).
	Backward(dLogits []float32) (*tensor.Matrix, error)
	// Step applies the optimisers to the gradients of the last Backward.
	Step() error
	// Save and Load are as for Bottom.
	Save(w io.Writer) error
	Load(r io.Reader) error
}

// Config describes a deep split model (Wide&Deep or MLP). The zero value
// of a field means its default (see [DefaultConfig]).
type Config struct {
	// Widths of the Dense+ReLU layers of the deep part, in order.
	Widths []int
	// Cut is how many of those layers the passive party owns (1 ≤ Cut ≤
	// len(Widths)); the cut embedding is layer Cut's output.
	Cut int
	// EmbDim is the width of each categorical field's deep embedding.
	EmbDim int
	// L2 is the embedding regularisation λ, applied to the rows each batch
	// touches (see nn.Embedding), on the deep and the wide embeddings.
	// Negative disables it (0 means the default).
	L2 float32
	// LR is Adam's learning rate on both sides.
	LR float32
	// EmbInit is the half-width of the uniform initialisation of
	// embeddings (Keras' default for Embedding layers is 0.05).
	EmbInit float32
	// Seed fixes every random initialisation.
	Seed uint64
	// WideStandardise makes the wide part of Wide&Deep read its dense
	// columns standardised by the active party's training rows (see
	// widescale.go); false reads them as given (min–max scaled to [0, 1]
	// by the reader), as the authors' model does.
	WideStandardise bool
}

// DefaultConfig returns the authors' Wide&Deep setup (METHODS §6): 6 Dense
// layers of 128 units, cut after the 3rd, embeddings of dimension 4, L2
// 0.01, Adam with learning rate 1e-4, seed 1.
func DefaultConfig() Config {
	return Config{Widths: []int{128, 128, 128, 128, 128, 128}, Cut: 3, EmbDim: 4, L2: 0.01, LR: nn.DefaultLR, EmbInit: 0.05, Seed: 1}
}

// resolve fills defaults and checks the config.
func (c Config) resolve() (Config, error) {
	d := DefaultConfig()
	if c.Widths == nil {
		c.Widths = d.Widths
	}
	c.Widths = append([]int(nil), c.Widths...)
	if c.Cut == 0 {
		c.Cut = min(d.Cut, len(c.Widths))
	}
	if c.EmbDim == 0 {
		c.EmbDim = d.EmbDim
	}
	if c.L2 == 0 {
		c.L2 = d.L2
	} else if c.L2 < 0 {
		c.L2 = 0
	}
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.EmbInit == 0 {
		c.EmbInit = d.EmbInit
	}
	if len(c.Widths) == 0 {
		return c, fmt.Errorf("model: config has no layers")
	}
	for i, w := range c.Widths {
		if w <= 0 {
			return c, fmt.Errorf("model: layer %d has width %d; widths must be positive", i+1, w)
		}
	}
	if c.Cut < 1 || c.Cut > len(c.Widths) {
		return c, fmt.Errorf("model: cut %d outside [1, %d] (the number of layers)", c.Cut, len(c.Widths))
	}
	if c.EmbDim < 0 || c.LR < 0 || c.EmbInit < 0 {
		return c, fmt.Errorf("model: negative embedding dimension %d, learning rate %v or init %v", c.EmbDim, c.LR, c.EmbInit)
	}
	return c, nil
}

// Schema is the shape of a party's input: the vocabulary size of each
// categorical column and the number of dense columns.
type Schema struct {
	Cardinality []int
	NumDense    int
}

// SchemaOf returns the schema of a feature table.
func SchemaOf(f *data.Features) Schema {
	return Schema{Cardinality: append([]int(nil), f.Cardinality...), NumDense: f.NumDense}
}

func (s Schema) check(what string) error {
	for j, c := range s.Cardinality {
		if c <= 0 {
			return fmt.Errorf("model: %s categorical column %d has cardinality %d", what, j, c)
		}
	}
	if s.NumDense < 0 {
		return fmt.Errorf("model: %s has %d dense columns", what, s.NumDense)
	}
	if len(s.Cardinality) == 0 && s.NumDense == 0 {
		return fmt.Errorf("model: %s has no columns", what)
	}
	return nil
}

// checkBatch validates a batch against a schema.
func checkBatch(what string, b *data.Batch, s Schema) error {
	if b == nil {
		return fmt.Errorf("model: %s: nil batch", what)
	}
	if b.Rows <= 0 {
		return fmt.Errorf("model: %s: batch has %d rows", what, b.Rows)
	}
	if len(b.Cat) != b.Rows*len(s.Cardinality) {
		return fmt.Errorf("model: %s: batch has %d categorical ids for %d rows × %d columns", what, len(b.Cat), b.Rows, len(s.Cardinality))
	}
	if s.NumDense > 0 {
		if b.Dense == nil || b.Dense.Rows != b.Rows || b.Dense.Cols != s.NumDense {
			r, c := 0, 0
			if b.Dense != nil {
				r, c = b.Dense.Rows, b.Dense.Cols
			}
			return fmt.Errorf("model: %s: dense block is %d×%d, want %d×%d", what, r, c, b.Rows, s.NumDense)
		}
		if err := tensor.CheckFinite("model: "+what+": dense features", b.Dense); err != nil {
			return err
		}
	}
	return nil
}

// Stream constants of the random streams (seeded by Config.Seed) that
// initialise each part, so that no part's initialisation depends on which
// others exist.
const (
	streamBottomEmb   = 0x5b0e
	streamBottomDense = 0x5b00 // + layer index
	streamTopDense    = 0x5c00 // + layer index
	streamTopLogit    = 0x5cff
	streamWideEmb     = 0x5d0e
	streamWideLinear  = 0x5d01
)

// NewWideDeep builds the split Wide&Deep model of METHODS §6: the passive
// bottom over the passive features, and the active top whose wide part
// reads the active party's own features (schema active).
func NewWideDeep(cfg Config, passive, active Schema) (*DeepBottom, *DeepTop, error) {
	b, err := NewBottom(cfg, passive)
	if err != nil {
		return nil, nil, err
	}
	t, err := NewTop(cfg, &active)
	if err != nil {
		return nil, nil, err
	}
	return b, t, nil
}

// NewMLP builds a split MLP for generic tables: the same bottom, and a
// top without a wide part (its Forward takes a nil wide batch).
func NewMLP(cfg Config, passive Schema) (*DeepBottom, *DeepTop, error) {
	b, err := NewBottom(cfg, passive)
	if err != nil {
		return nil, nil, err
	}
	t, err := NewTop(cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	return b, t, nil
}
