package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// DeepTop is the active party's model: the deep layers after the cut
// (Dense+ReLU each), a Dense logit layer, and optionally the wide part of
// Wide&Deep — a dim-1 embedding per categorical column of the active
// party's features plus a linear map (with bias) of its dense columns —
// whose value is added to the deep logit. The wide embeddings are
// regularised and updated like the passive ones (L2 on touched rows,
// LazyAdam).
type DeepTop struct {
	cfg  Config
	wide *Schema // nil without a wide part

	dense  []*nn.Dense
	relu   []*nn.ReLU
	logit  *nn.Dense
	params []*nn.Param
	opt    *nn.Adam

	wideEmb    *nn.Embedding // nil without wide categorical columns
	wideEmbOpt *nn.LazyAdam
	wideLin    *nn.Dense  // nil without wide dense columns
	wideScale  *wideScale // nil: the wide part reads the dense columns as given
	// widePenalty is the L2 gradient factor of each wide linear weight
	// (StartWide; nil: none).
	widePenalty []float32

	logits  []float32
	dOut    tensor.Matrix // B×1
	wideE   tensor.Matrix // B×F wide embedding values
	wideG   tensor.Matrix // B×F their gradient
	rows    int
	pending bool
}

// NewTop builds the active model for the config; wide is the schema of
// the active party's wide features, or nil for a model without a wide
// part (MLP).
func NewTop(cfg Config, wide *Schema) (*DeepTop, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	t := &DeepTop{cfg: cfg}
	width := cfg.Widths[cfg.Cut-1]
	for i, w := range cfg.Widths[cfg.Cut:] {
		d := nn.NewDense(width, w, nn.HeNormal, rand.New(rand.NewPCG(cfg.Seed, streamTopDense+uint64(i))))
		t.dense = append(t.dense, d)
		t.relu = append(t.relu, &nn.ReLU{})
		t.params = append(t.params, d.Params()...)
		width = w
	}
	t.logit = nn.NewDense(width, 1, nn.GlorotUniform, rand.New(rand.NewPCG(cfg.Seed, streamTopLogit)))
	t.params = append(t.params, t.logit.Params()...)
	if wide != nil {
		if err := wide.check("wide input"); err != nil {
			return nil, err
		}
		t.wide = &Schema{Cardinality: append([]int(nil), wide.Cardinality...), NumDense: wide.NumDense}
		if len(wide.Cardinality) > 0 {
			t.wideEmb, err = nn.NewEmbedding(wide.Cardinality, 1, cfg.EmbInit, rand.New(rand.NewPCG(cfg.Seed, streamWideEmb)))
			if err != nil {
				return nil, fmt.Errorf("model: wide embeddings: %w", err)
			}
			t.wideEmb.L2 = cfg.L2
			t.wideEmbOpt = nn.NewLazyAdam(cfg.LR)
		}
		if wide.NumDense > 0 {
			t.wideLin = nn.NewDense(wide.NumDense, 1, nn.GlorotUniform, rand.New(rand.NewPCG(cfg.Seed, streamWideLinear)))
			t.wideLin.SkipInputGrad = true
			t.params = append(t.params, t.wideLin.Params()...)
		}
	}
	t.opt = nn.NewAdam(cfg.LR)
	t.opt.Init(t.params)
	return t, nil
}

// CutDim returns d, the width of the cut embedding the top expects.
func (t *DeepTop) CutDim() int { return t.cfg.Widths[t.cfg.Cut-1] }

// HasWide reports whether the model has a wide part.
func (t *DeepTop) HasWide() bool { return t.wide != nil }

// WideEmbedding returns the wide embedding layer (nil if none).
func (t *DeepTop) WideEmbedding() *nn.Embedding { return t.wideEmb }

// Forward implements Top.
func (t *DeepTop) Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error) {
	if e == nil || e.Rows <= 0 || e.Cols != t.CutDim() {
		r, c := -1, -1
		if e != nil {
			r, c = e.Rows, e.Cols
		}
		return nil, fmt.Errorf("model: active forward: cut embedding is %d×%d, want B×%d with B > 0", r, c, t.CutDim())
	}
	if err := tensor.CheckFinite("model: active forward: cut embedding", e); err != nil {
		return nil, err
	}
	B := e.Rows
	if t.wide == nil && wide != nil {
		return nil, fmt.Errorf("model: active forward: the model has no wide part but was given wide features")
	}
	if t.wide != nil {
		if err := checkBatch("active forward (wide features)", wide, *t.wide); err != nil {
			return nil, err
		}
		if wide.Rows != B {
			return nil, fmt.Errorf("model: active forward: %d rows of wide features for %d cut-embedding rows", wide.Rows, B)
		}
	}
	h := e
	for i := range t.dense {
		h = nn.DenseReLU(t.dense[i], t.relu[i], h)
	}
	out := t.logit.Forward(h)
	if cap(t.logits) < B {
		t.logits = make([]float32, B)
	}
	t.logits = t.logits[:B]
	copy(t.logits, out.Data)
	if t.wideEmb != nil {
		F := t.wideEmb.Fields()
		t.wideE.Resize(B, F)
		// Each row's wide values are summed into its logit in the
		// lookup's parallel parts, beside the values just written.
		we, logits := t.wideE.Data, t.logits
		if err := t.wideEmb.LookupThen(wide.Cat, B, &t.wideE, 0, func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				var s float32
				for _, v := range we[i*F : (i+1)*F] {
					s += v
				}
				logits[i] += s
			}
		}); err != nil {
			return nil, fmt.Errorf("model: active forward (wide features): %w", err)
		}
	}
	if t.wideLin != nil {
		in := wide.Dense
		if t.wideScale != nil {
			in = t.wideScale.apply(in)
		}
		lin := t.wideLin.Forward(in)
		for i := range B {
			t.logits[i] += lin.Data[i]
		}
	}
	t.rows = B
	return t.logits, nil
}

// Backward implements Top.
func (t *DeepTop) Backward(dLogits []float32) (*tensor.Matrix, error) {
	if t.rows == 0 {
		return nil, fmt.Errorf("model: active backward before any Forward")
	}
	if len(dLogits) != t.rows {
		return nil, fmt.Errorf("model: active backward: %d logit gradients for a batch of %d", len(dLogits), t.rows)
	}
	if err := tensor.CheckFiniteSlice("model: active backward: logit gradient", dLogits); err != nil {
		return nil, err
	}
	B := t.rows
	t.dOut.Resize(B, 1)
	copy(t.dOut.Data, dLogits)
	// Each layer's input gradient passes through the ReLU below it in
	// the parallel parts that compute it (nn.DenseBackwardReLU): g is the
	// gradient at the output of dense layer i, before its ReLU.
	L := len(t.dense)
	var g *tensor.Matrix
	if L == 0 {
		g = t.logit.Backward(&t.dOut)
	} else {
		_, g = nn.DenseBackwardReLU(t.logit, &t.dOut, t.relu[L-1])
		for i := L - 1; i > 0; i-- {
			_, g = nn.DenseBackwardReLU(t.dense[i], g, t.relu[i-1])
		}
		g = t.dense[0].Backward(g)
	}
	if t.wideEmb != nil {
		F := t.wideEmb.Fields()
		t.wideG.Resize(B, F)
		for i, d := range dLogits {
			row := t.wideG.Row(i)
			for j := range row {
				row[j] = d
			}
		}
		t.wideEmb.Backward(&t.wideG, 0)
	}
	if t.wideLin != nil {
		t.wideLin.Backward(&t.dOut)
		t.penaliseWide()
	}
	t.pending = true
	return g, nil
}

// Step implements Top.
func (t *DeepTop) Step() error {
	if !t.pending {
		return fmt.Errorf("model: active Step without a Backward since the last Step")
	}
	if t.wideEmb != nil {
		// The dense parameters' Adam runs in the wide embedding's
		// update region, beside its shards.
		parts, part := t.opt.Begin(t.params)
		t.wideEmbOpt.StepWith(t.wideEmb, parts, part)
	} else {
		t.opt.Step(t.params)
	}
	t.pending = false
	return nil
}
