package step

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultCNNBatch is the ISIC batch size of METHODS §6.
const DefaultCNNBatch = 128

// streamCNNBench seeds the CNN benchmark's synthetic batches.
const streamCNNBench = 0xbe7d

// cnnBenchBatches is how many distinct batches the CNN benchmark cycles
// through.
const cnnBenchBatches = 2

// CNN runs complete split training steps of the CNN on synthetic
// images: pixels uniform in [0, 1), labels 10% positive (the ISIC
// rebalancing). It is the CNN counterpart of [WDL].
type CNN struct {
	Bottom *model.CNNBottom
	Top    *model.CNNTop
	Batch  int

	batches []*data.Batch
	labels  [][]float32
	dLogits []float32
	next    int
}

// NewCNN builds the CNN of cfg (model.DefaultCNNConfig when the zero
// value) and synthetic batches of the given size (DefaultCNNBatch when
// ≤ 0).
func NewCNN(cfg model.CNNConfig, batch int) (*CNN, error) {
	if batch <= 0 {
		batch = DefaultCNNBatch
	}
	bot, top, err := model.NewCNN(cfg)
	if err != nil {
		return nil, err
	}
	c := bot.Config()
	width := c.Height * c.Width * c.Channels
	sb := &CNN{Bottom: bot, Top: top, Batch: batch, dLogits: make([]float32, batch)}
	r := rand.New(rand.NewPCG(c.Seed, streamCNNBench))
	for range cnnBenchBatches {
		b := &data.Batch{Rows: batch, Dense: tensor.New(batch, width)}
		for i := range b.Dense.Data {
			b.Dense.Data[i] = r.Float32()
		}
		y := make([]float32, batch)
		for i := range y {
			if r.Float64() < 0.1 {
				y[i] = 1
			}
		}
		sb.batches = append(sb.batches, b)
		sb.labels = append(sb.labels, y)
	}
	return sb, nil
}

// FLOPs returns the approximate floating-point operations of one step:
// the convolutions' and Dense layers' matrix products (forward, weight
// gradient, input gradient; the first convolution has no input gradient).
func (sb *CNN) FLOPs() float64 {
	c := sb.Bottom.Config()
	var f float64
	for i := range c.Blocks {
		h, w := blockShape(c, i)
		cin := c.Filters
		passes := 3.0
		if i == 0 {
			cin, passes = c.Channels, 2
		}
		f += passes * 2 * float64(sb.Batch*h*w) * float64(c.Kernel*c.Kernel*cin) * float64(c.Filters)
	}
	h, w := blockShape(c, c.Blocks)
	f += 3 * 2 * float64(sb.Batch) * float64(h*w*c.Filters+1) * float64(c.Dense)
	return f
}

// Step runs one split step on the next batch: passive forward, active
// forward, BCE, active backward, passive backward with the cut gradient,
// and both sides' Adam updates. It returns the batch's loss.
func (sb *CNN) Step() (float64, error) {
	in, y := sb.batches[sb.next], sb.labels[sb.next]
	sb.next = (sb.next + 1) % len(sb.batches)
	loss, err := splitStep(sb.Bottom, sb.Top, in, nil, y, sb.dLogits)
	if err != nil {
		return 0, fmt.Errorf("step: CNN benchmark: %w", err)
	}
	return loss, nil
}

// blockShape returns the input height and width of block i (0-based) of
// the resolved config c: every block halves both (its 2×2 max-pool).
func blockShape(c model.CNNConfig, i int) (h, w int) {
	h, w = c.Height, c.Width
	for range i {
		h, w = h/2, w/2
	}
	return h, w
}
