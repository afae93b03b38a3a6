package model

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultCNNLR is the Adam learning rate of the authors' ISIC runs
// (METHODS §6).
const DefaultCNNLR = 1e-5

// CNNConfig describes the split convolutional model. The zero value of a
// field means its default (see [DefaultCNNConfig]).
type CNNConfig struct {
	// Height, Width and Channels are the input image's shape; rows of the
	// input batch are images in NHWC order (data.ImageShape).
	Height, Width, Channels int
	// Blocks is the number of [conv K×K 'same', ReLU, maxpool 2×2] blocks;
	// each halves the height and width (rounding down), which must stay
	// at least 1.
	Blocks int
	// Filters is the number of output channels of every convolution.
	Filters int
	// Kernel is the convolution's kernel size K.
	Kernel int
	// Dense is the width of the Dense+ReLU layer between the flattened
	// last block and the logit.
	Dense int
	// Cut is how many blocks the passive party owns (1 ≤ Cut ≤ Blocks);
	// the cut embedding is block Cut's flattened output.
	Cut int
	// LR is Adam's learning rate on both sides.
	LR float32
	// Seed fixes every random initialisation.
	Seed uint64
}

// DefaultCNNConfig returns the authors' ISIC model (METHODS §6): 84×84×3
// inputs, 6 blocks of 64 3×3 filters, a Dense layer of 64, the cut after
// block 4 (5×5×64 = 1600 values), Adam with learning rate 1e-5, seed 1.
func DefaultCNNConfig() CNNConfig {
	return CNNConfig{Height: 84, Width: 84, Channels: 3, Blocks: 6, Filters: 64, Kernel: 3, Dense: 64, Cut: 4, LR: DefaultCNNLR, Seed: 1}
}

// resolve fills defaults and checks the config.
func (c CNNConfig) resolve() (CNNConfig, error) {
	d := DefaultCNNConfig()
	if c.Height == 0 {
		c.Height = d.Height
	}
	if c.Width == 0 {
		c.Width = d.Width
	}
	if c.Channels == 0 {
		c.Channels = d.Channels
	}
	if c.Blocks == 0 {
		c.Blocks = d.Blocks
	}
	if c.Filters == 0 {
		c.Filters = d.Filters
	}
	if c.Kernel == 0 {
		c.Kernel = d.Kernel
	}
	if c.Dense == 0 {
		c.Dense = d.Dense
	}
	if c.Cut == 0 {
		c.Cut = min(d.Cut, c.Blocks)
	}
	if c.LR == 0 {
		c.LR = d.LR
	}
	if c.Height < 0 || c.Width < 0 || c.Channels < 0 || c.Blocks < 0 || c.Filters < 0 || c.Kernel < 0 || c.Dense < 0 || c.LR < 0 {
		return c, fmt.Errorf("model: CNN config %+v has a negative size or learning rate", c)
	}
	if c.Cut < 1 || c.Cut > c.Blocks {
		return c, fmt.Errorf("model: CNN cut %d outside [1, %d] (the number of blocks)", c.Cut, c.Blocks)
	}
	h, w := c.Height, c.Width
	for i := range c.Blocks {
		if h < 2 || w < 2 {
			return c, fmt.Errorf("model: CNN block %d would pool a %d×%d image; %d×%d inputs allow at most %d blocks", i+1, h, w, c.Height, c.Width, i)
		}
		h, w = h/2, w/2
	}
	return c, nil
}

// blockShape returns the input height and width of block i (0-based),
// i.e. the output shape of block i−1.
func (c CNNConfig) blockShape(i int) (h, w int) {
	h, w = c.Height, c.Width
	for range i {
		h, w = h/2, w/2
	}
	return h, w
}

// CutDim returns the width of the cut embedding: block Cut's output
// h·w·Filters. The config must be resolved.
func (c CNNConfig) CutDim() int {
	h, w := c.blockShape(c.Cut)
	return h * w * c.Filters
}

// Stream constants of the CNN's initialisation (seeded by CNNConfig.Seed).
// A block's stream depends on its index among all blocks, not on the cut,
// so moving the cut does not change any weight.
const (
	streamCNNConv  = 0x6c00 // + block index
	streamCNNDense = 0x6d00
	streamCNNLogit = 0x6dff
)

// convBlock is conv → ReLU → maxpool.
type convBlock struct {
	conv *nn.Conv2D
	relu *nn.ReLU
	pool *nn.MaxPool2D
}

func newBlock(c CNNConfig, i int) convBlock {
	h, w := c.blockShape(i)
	cin := c.Filters
	if i == 0 {
		cin = c.Channels
	}
	return convBlock{
		conv: nn.NewConv2D(h, w, cin, c.Filters, c.Kernel, rand.New(rand.NewPCG(c.Seed, streamCNNConv+uint64(i)))),
		relu: &nn.ReLU{},
		pool: nn.NewMaxPool2D(h, w, c.Filters),
	}
}

func (b convBlock) forward(x *tensor.Matrix) *tensor.Matrix {
	return b.pool.Forward(nn.Conv2DReLU(b.conv, b.relu, x))
}

func (b convBlock) backward(g *tensor.Matrix) *tensor.Matrix {
	return b.conv.Backward(nn.MaxPool2DBackwardReLU(b.pool, b.relu, g))
}

func (b convBlock) inputGrad(g *tensor.Matrix) *tensor.Matrix {
	return b.conv.InputGrad(b.relu.InputGrad(b.pool.InputGrad(g)))
}

// NewCNN builds the split CNN of METHODS §6: the passive bottom (blocks
// 1…Cut) and the active top (blocks Cut+1…Blocks, flatten, Dense+ReLU,
// logit).
func NewCNN(cfg CNNConfig) (*CNNBottom, *CNNTop, error) {
	b, err := NewCNNBottom(cfg)
	if err != nil {
		return nil, nil, err
	}
	t, err := NewCNNTop(cfg)
	if err != nil {
		return nil, nil, err
	}
	return b, t, nil
}

// CNNBottom is the passive party's part of the CNN: the first Cut
// convolutional blocks. Each block's (flattened) output is an observable
// layer of ARCHITECTURE.md, the last being the cut embedding.
type CNNBottom struct {
	cnnSide
	cfg    CNNConfig
	blocks []convBlock

	outs     []*tensor.Matrix
	grads    []*tensor.Matrix
	audGrads []*tensor.Matrix
	rows     int
}

// NewCNNBottom builds the passive side of the CNN.
func NewCNNBottom(cfg CNNConfig) (*CNNBottom, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	b := &CNNBottom{cfg: cfg, cnnSide: cnnSide{kind: "cnn_bottom", who: "passive"}}
	for i := range cfg.Cut {
		blk := newBlock(cfg, i)
		b.blocks = append(b.blocks, blk)
		b.params = append(b.params, blk.conv.Params()...)
	}
	// The first block's input is raw pixels: nobody needs its gradient.
	b.blocks[0].conv.SkipInputGrad = true
	b.initOpt(cfg.LR)
	b.outs = make([]*tensor.Matrix, cfg.Cut)
	b.grads = make([]*tensor.Matrix, cfg.Cut)
	b.audGrads = make([]*tensor.Matrix, cfg.Cut)
	return b, nil
}

// Config returns the resolved configuration.
func (b *CNNBottom) Config() CNNConfig { return b.cfg }

// CutDim implements Bottom.
func (b *CNNBottom) CutDim() int { return b.cfg.CutDim() }

// LayerShapes returns the image shape of each passive block's output,
// first first (the last is the cut).
func (b *CNNBottom) LayerShapes() []data.ImageShape {
	s := make([]data.ImageShape, len(b.blocks))
	for i := range s {
		h, w := b.cfg.blockShape(i + 1)
		s[i] = data.ImageShape{Height: h, Width: w, Channels: b.cfg.Filters}
	}
	return s
}

// Forward implements Bottom. The batch must have no categorical columns
// and a B×(Height·Width·Channels) dense block of finite values.
func (b *CNNBottom) Forward(in *data.Batch) (*tensor.Matrix, error) {
	c := b.cfg
	if in == nil {
		return nil, fmt.Errorf("model: passive CNN forward: nil batch")
	}
	if in.Rows <= 0 {
		return nil, fmt.Errorf("model: passive CNN forward: batch has %d rows", in.Rows)
	}
	if len(in.Cat) != 0 {
		return nil, fmt.Errorf("model: passive CNN forward: batch has %d categorical ids; the CNN reads images only", len(in.Cat))
	}
	want := c.Height * c.Width * c.Channels
	if in.Dense == nil || in.Dense.Rows != in.Rows || in.Dense.Cols != want {
		r, cols := 0, 0
		if in.Dense != nil {
			r, cols = in.Dense.Rows, in.Dense.Cols
		}
		return nil, fmt.Errorf("model: passive CNN forward: image block is %d×%d, want %d×%d (%d×%d×%d images)", r, cols, in.Rows, want, c.Height, c.Width, c.Channels)
	}
	if err := tensor.CheckFinite("model: passive CNN forward: pixels", in.Dense); err != nil {
		return nil, err
	}
	h := in.Dense
	for i, blk := range b.blocks {
		h = blk.forward(h)
		b.outs[i] = h
	}
	b.rows = in.Rows
	return h, nil
}

// Outputs implements Bottom: each block's flattened output.
func (b *CNNBottom) Outputs() []*tensor.Matrix { return b.outs }

func (b *CNNBottom) checkGrad(what string, g *tensor.Matrix) error {
	return checkCutGrad("passive CNN "+what, b.rows, b.CutDim(), g)
}

// Backward implements Bottom.
func (b *CNNBottom) Backward(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	if err := b.checkGrad("backward", gCut); err != nil {
		return nil, err
	}
	back := func(i int, g *tensor.Matrix) *tensor.Matrix { return b.blocks[i].backward(g) }
	layerGrads(b.grads, gCut, back)
	back(0, b.grads[0]) // the first block's parameter gradients; its input (pixels) needs none
	b.pending = true
	return b.grads, nil
}

// Backprop implements Bottom: the activation gradients of Backward,
// computed with the layers' InputGrad, leaving parameter gradients alone.
func (b *CNNBottom) Backprop(gCut *tensor.Matrix) ([]*tensor.Matrix, error) {
	if err := b.checkGrad("backprop", gCut); err != nil {
		return nil, err
	}
	layerGrads(b.audGrads, gCut, func(i int, g *tensor.Matrix) *tensor.Matrix { return b.blocks[i].inputGrad(g) })
	return b.audGrads, nil
}

// Step implements Bottom.
func (b *CNNBottom) Step() error { return b.step() }

// Save implements Bottom: parameters, Adam moments and the step count.
func (b *CNNBottom) Save(w io.Writer) error { return b.save(w) }

// Load implements Bottom. On error the model's state is unspecified.
func (b *CNNBottom) Load(r io.Reader) error { return b.load(r) }

// CNNTop is the active party's part of the CNN: blocks Cut+1…Blocks,
// flatten, a Dense+ReLU layer and the logit. It has no wide part.
type CNNTop struct {
	cnnSide
	cfg     CNNConfig
	blocks  []convBlock
	flatten *nn.Flatten
	dense   *nn.Dense
	relu    *nn.ReLU
	logit   *nn.Dense

	logits []float32
	dOut   tensor.Matrix
	rows   int
}

// NewCNNTop builds the active side of the CNN.
func NewCNNTop(cfg CNNConfig) (*CNNTop, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	t := &CNNTop{cfg: cfg, cnnSide: cnnSide{kind: "cnn_top", who: "active"}}
	for i := cfg.Cut; i < cfg.Blocks; i++ {
		blk := newBlock(cfg, i)
		t.blocks = append(t.blocks, blk)
		t.params = append(t.params, blk.conv.Params()...)
	}
	h, w := cfg.blockShape(cfg.Blocks)
	t.flatten = &nn.Flatten{H: h, W: w, C: cfg.Filters}
	t.dense = nn.NewDense(t.flatten.Width(), cfg.Dense, nn.HeNormal, rand.New(rand.NewPCG(cfg.Seed, streamCNNDense)))
	t.relu = &nn.ReLU{}
	t.logit = nn.NewDense(cfg.Dense, 1, nn.GlorotUniform, rand.New(rand.NewPCG(cfg.Seed, streamCNNLogit)))
	t.params = append(t.params, t.dense.Params()...)
	t.params = append(t.params, t.logit.Params()...)
	t.initOpt(cfg.LR)
	return t, nil
}

// Config returns the resolved configuration.
func (t *CNNTop) Config() CNNConfig { return t.cfg }

// CutDim returns the width of the cut embedding the top expects.
func (t *CNNTop) CutDim() int { return t.cfg.CutDim() }

// Forward implements Top; wide must be nil (the CNN has no wide part).
func (t *CNNTop) Forward(e *tensor.Matrix, wide *data.Batch) ([]float32, error) {
	if wide != nil {
		return nil, fmt.Errorf("model: active CNN forward: the CNN has no wide part but was given wide features")
	}
	if e == nil || e.Rows <= 0 || e.Cols != t.CutDim() {
		r, c := -1, -1
		if e != nil {
			r, c = e.Rows, e.Cols
		}
		return nil, fmt.Errorf("model: active CNN forward: cut embedding is %d×%d, want B×%d with B > 0", r, c, t.CutDim())
	}
	if err := tensor.CheckFinite("model: active CNN forward: cut embedding", e); err != nil {
		return nil, err
	}
	h := e
	for _, blk := range t.blocks {
		h = blk.forward(h)
	}
	out := t.logit.Forward(t.relu.Forward(t.dense.Forward(t.flatten.Forward(h))))
	B := e.Rows
	if cap(t.logits) < B {
		t.logits = make([]float32, B)
	}
	t.logits = t.logits[:B]
	copy(t.logits, out.Data)
	t.rows = B
	return t.logits, nil
}

// Backward implements Top.
func (t *CNNTop) Backward(dLogits []float32) (*tensor.Matrix, error) {
	if t.rows == 0 {
		return nil, fmt.Errorf("model: active CNN backward before any Forward")
	}
	if len(dLogits) != t.rows {
		return nil, fmt.Errorf("model: active CNN backward: %d logit gradients for a batch of %d", len(dLogits), t.rows)
	}
	if err := tensor.CheckFiniteSlice("model: active CNN backward: logit gradient", dLogits); err != nil {
		return nil, err
	}
	t.dOut.Resize(t.rows, 1)
	copy(t.dOut.Data, dLogits)
	g := t.flatten.Backward(t.dense.Backward(t.relu.Backward(t.logit.Backward(&t.dOut))))
	for i := len(t.blocks) - 1; i >= 0; i-- {
		g = t.blocks[i].backward(g)
	}
	t.pending = true
	return g, nil
}

// Step implements Top.
func (t *CNNTop) Step() error { return t.step() }

// Save implements Top.
func (t *CNNTop) Save(w io.Writer) error { return t.save(w) }

// Load implements Top. On error the model's state is unspecified.
func (t *CNNTop) Load(r io.Reader) error { return t.load(r) }

// cnnSide is what the two sides of the CNN train and checkpoint alike:
// their parameters, the Adam optimiser over them and whether a Backward
// awaits its Step.
type cnnSide struct {
	kind    string // checkpoint kind: "cnn_bottom" or "cnn_top"
	who     string // "passive" or "active", for errors
	params  []*nn.Param
	opt     *nn.Adam
	pending bool // a Backward not yet consumed by Step
}

// initOpt makes the optimiser, once params is complete.
func (s *cnnSide) initOpt(lr float32) {
	s.opt = nn.NewAdam(lr)
	s.opt.Init(s.params)
}

func (s *cnnSide) step() error {
	if !s.pending {
		return fmt.Errorf("model: %s CNN Step without a Backward since the last Step", s.who)
	}
	s.opt.Step(s.params)
	s.pending = false
	return nil
}

func (s *cnnSide) save(w io.Writer) error { return save(w, cnnState(s.kind, s.params, s.opt)) }

func (s *cnnSide) load(r io.Reader) error {
	s.pending = false
	return load(r, cnnState(s.kind, s.params, s.opt))
}

// cnnState lists a CNN side's checkpoint: each parameter with its Adam
// moments, and Adam's step count (format in checkpoint.go).
func cnnState(kind string, params []*nn.Param, opt *nn.Adam) state {
	s := state{kind: kind}
	s.addAdam(params, opt)
	return s
}

// Compile-time checks that the CNN sides satisfy the model interfaces.
var (
	_ Bottom = (*CNNBottom)(nil)
	_ Top    = (*CNNTop)(nil)
)
