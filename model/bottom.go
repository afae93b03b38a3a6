package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// DeepBottom is the passive party's model for tabular data: each
// categorical column's deep embedding (EmbDim wide) concatenated with the
// dense columns, then Cut Dense+ReLU layers. Its layers' outputs are the
// observable layers of ARCHITECTURE.md ("first" … "cut"). Parameters are
// updated by Adam, the embeddings by LazyAdam on the touched rows.
type DeepBottom struct {
	cfg    Config
	schema Schema

	emb    *nn.Embedding // nil without categorical columns
	embOpt *nn.LazyAdam
	dense  []*nn.Dense
	relu   []*nn.ReLU
	params []*nn.Param
	opt    *nn.Adam
	// stepper, when set, updates params in place of opt (SetStepper).
	stepper ParamStepper

	x        tensor.Matrix // B × (F·EmbDim + NumDense)
	outs     []*tensor.Matrix
	grads    []*tensor.Matrix
	audGrads []*tensor.Matrix
	rows     int  // B of the last Forward; 0 before any
	pending  bool // a Backward not yet consumed by Step
	// track, when set (TrackUpdates), records each Step's change of the
	// dense weights for Extrapolate.
	track *weightTrack
}

// NewBottom builds the passive model for inputs of schema in.
func NewBottom(cfg Config, in Schema) (*DeepBottom, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if err := in.check("passive input"); err != nil {
		return nil, err
	}
	b := &DeepBottom{cfg: cfg, schema: Schema{Cardinality: append([]int(nil), in.Cardinality...), NumDense: in.NumDense}}
	width := in.NumDense
	if len(in.Cardinality) > 0 {
		b.emb, err = nn.NewEmbedding(in.Cardinality, cfg.EmbDim, cfg.EmbInit, rand.New(rand.NewPCG(cfg.Seed, streamBottomEmb)))
		if err != nil {
			return nil, fmt.Errorf("model: passive embeddings: %w", err)
		}
		b.emb.L2 = cfg.L2
		b.embOpt = nn.NewLazyAdam(cfg.LR)
		width += b.emb.Width()
	}
	for i, w := range cfg.Widths[:cfg.Cut] {
		d := nn.NewDense(width, w, nn.HeNormal, rand.New(rand.NewPCG(cfg.Seed, streamBottomDense+uint64(i))))
		b.dense = append(b.dense, d)
		b.relu = append(b.relu, &nn.ReLU{})
		b.params = append(b.params, d.Params()...)
		width = w
	}
	b.dense[0].SkipInputGrad = b.emb == nil
	b.opt = nn.NewAdam(cfg.LR)
	b.opt.Init(b.params)
	b.outs = make([]*tensor.Matrix, cfg.Cut)
	b.grads = make([]*tensor.Matrix, cfg.Cut)
	b.audGrads = make([]*tensor.Matrix, cfg.Cut)
	return b, nil
}

// CutDim implements Bottom.
func (b *DeepBottom) CutDim() int { return b.cfg.Widths[b.cfg.Cut-1] }

// Config returns the resolved configuration.
func (b *DeepBottom) Config() Config { return b.cfg }

// Embedding returns the deep embedding layer (nil without categorical
// columns), for tests and inspection.
func (b *DeepBottom) Embedding() *nn.Embedding { return b.emb }

// Dense returns the passive Dense layers, first first.
func (b *DeepBottom) Dense() []*nn.Dense { return b.dense }

// Forward implements Bottom.
func (b *DeepBottom) Forward(in *data.Batch) (*tensor.Matrix, error) {
	if err := checkBatch("passive forward", in, b.schema); err != nil {
		return nil, err
	}
	B := in.Rows
	ew := 0
	if b.emb != nil {
		ew = b.emb.Width()
	}
	b.x.Resize(B, ew+b.schema.NumDense)
	var dense func(i0, i1 int) // copies the dense columns of rows [i0, i1) beside the embeddings
	if nd := b.schema.NumDense; nd > 0 {
		x, cols, src := b.x.Data, b.x.Cols, in.Dense.Data
		dense = func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				copy(x[i*cols+ew:(i+1)*cols], src[i*nd:(i+1)*nd])
			}
		}
	}
	if b.emb != nil {
		// The dense columns are copied in the lookup's parallel parts,
		// row range by row range, beside the vectors just written.
		if err := b.emb.LookupThen(in.Cat, B, &b.x, 0, dense); err != nil {
			return nil, fmt.Errorf("model: passive forward: %w", err)
		}
	} else if dense != nil {
		dense(0, B)
	}
	b.forwardFrom(0, &b.x)
	b.rows = B
	return b.outs[len(b.outs)-1], nil
}

// forwardFrom runs layers from..Cut−1 on h, the input of layer from.
func (b *DeepBottom) forwardFrom(from int, h *tensor.Matrix) {
	for i := from; i < len(b.dense); i++ {
		h = nn.DenseReLU(b.dense[i], b.relu[i], h)
		b.outs[i] = h
	}
}

// Outputs implements Bottom.
func (b *DeepBottom) Outputs() []*tensor.Matrix { return b.outs }

func (b *DeepBottom) checkGrad(what string, g *tensor.Matrix) error {
	return checkCutGrad("passive "+what, b.rows, b.CutDim(), g)
}

// checkCutGrad checks a cut-layer gradient handed to a bottom model:
// after a Forward of rows rows, of shape rows×dim, all finite.
func checkCutGrad(what string, rows, dim int, g *tensor.Matrix) error {
	if rows == 0 {
		return fmt.Errorf("model: %s before any Forward", what)
	}
	if g == nil || g.Rows != rows || g.Cols != dim {
		r, c := -1, -1
		if g != nil {
			r, c = g.Rows, g.Cols
		}
		return fmt.Errorf("model: %s: cut gradient is %d×%d, want %d×%d", what, r, c, rows, dim)
	}
	return tensor.CheckFinite("model: "+what+": cut gradient", g)
}

// layerGrads fills grads, one per observable layer of a bottom, with the
// gradients with respect to each layer's output: grads[L−1] = gCut, then
// grads[i−1] = back(i, grads[i]) from the cut down to layer 1. back(i, g)
// takes the gradient at layer i's output to the one at its input. Layer 0
// is left to the caller: Backward runs it too (for its parameter
// gradients), Backprop has nothing more to compute.
func layerGrads(grads []*tensor.Matrix, gCut *tensor.Matrix, back func(i int, g *tensor.Matrix) *tensor.Matrix) {
	L := len(grads)
	grads[L-1] = gCut
	for i := L - 1; i > 0; i-- {
		grads[i-1] = back(i, grads[i])
	}
}

// Backward implements Bottom.
func (b *DeepBottom) Backward(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	if err := b.checkGrad("backward", gCut); err != nil {
		return nil, err
	}
	// Each layer's input gradient passes through the ReLU below it in
	// the parallel parts that compute it (nn.DenseBackwardReLU); the
	// gradients at the layers' outputs (b.grads) are those layerGrads
	// would give.
	L := len(b.dense)
	b.grads[L-1] = gCut
	g := b.relu[L-1].Backward(gCut) // the gradient before the cut's ReLU
	for i := L - 1; i > 0; i-- {
		b.grads[i-1], g = nn.DenseBackwardReLU(b.dense[i], g, b.relu[i-1])
	}
	g = b.dense[0].Backward(g)
	if b.emb != nil {
		b.emb.Backward(g, 0)
	}
	b.pending = true
	return b.grads, nil
}

// Backprop implements Bottom.
func (b *DeepBottom) Backprop(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	if err := b.checkGrad("backprop", gCut); err != nil {
		return nil, err
	}
	layerGrads(b.audGrads, gCut, func(i int, g *tensor.Matrix) *tensor.Matrix {
		return b.dense[i].InputGrad(b.relu[i].InputGrad(g))
	})
	return b.audGrads, nil
}

// Step implements Bottom.
func (b *DeepBottom) Step() error {
	if !b.pending {
		return fmt.Errorf("model: passive Step without a Backward since the last Step")
	}
	if err := b.beforeStep(); err != nil {
		return err
	}
	switch {
	case b.stepper != nil:
		b.stepper.Step(b.params)
		if b.emb != nil {
			b.embOpt.Step(b.emb)
		}
	case b.emb != nil:
		// The dense parameters' Adam runs in the embedding's update
		// region, beside its shards.
		parts, part := b.opt.Begin(b.params)
		b.embOpt.StepWith(b.emb, parts, part)
	default:
		b.opt.Step(b.params)
	}
	b.afterStep()
	b.pending = false
	return nil
}
