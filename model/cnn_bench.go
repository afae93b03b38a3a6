package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultCNNBenchBatch is the ISIC batch size of SPEC §6.
const DefaultCNNBenchBatch = 128

// streamCNNBench seeds the CNN benchmark's synthetic batches.
const streamCNNBench = 0xbe7d

// cnnBenchBatches is how many distinct batches the CNN benchmark cycles
// through.
const cnnBenchBatches = 2

// CNNStepBench runs complete split training steps of the CNN on synthetic
// images: pixels uniform in [0, 1), labels 10% positive (the ISIC
// rebalancing). It is the CNN counterpart of [StepBench].
type CNNStepBench struct {
	Bottom *CNNBottom
	Top    *CNNTop
	Batch  int

	batches []*data.Batch
	labels  [][]float32
	dLogits []float32
	next    int
}

// NewCNNStepBench builds the CNN of cfg (DefaultCNNConfig when the zero
// value) and synthetic batches of the given size (DefaultCNNBenchBatch
// when ≤ 0).
func NewCNNStepBench(cfg CNNConfig, batch int) (*CNNStepBench, error) {
	if batch <= 0 {
		batch = DefaultCNNBenchBatch
	}
	bot, top, err := NewCNN(cfg)
	if err != nil {
		return nil, err
	}
	c := bot.Config()
	width := c.Height * c.Width * c.Channels
	sb := &CNNStepBench{Bottom: bot, Top: top, Batch: batch, dLogits: make([]float32, batch)}
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
func (sb *CNNStepBench) FLOPs() float64 {
	c := sb.Bottom.Config()
	var f float64
	for i := range c.Blocks {
		h, w := c.blockShape(i)
		cin := c.Filters
		passes := 3.0
		if i == 0 {
			cin, passes = c.Channels, 2
		}
		f += passes * 2 * float64(sb.Batch*h*w) * float64(c.Kernel*c.Kernel*cin) * float64(c.Filters)
	}
	h, w := c.blockShape(c.Blocks)
	f += 3 * 2 * float64(sb.Batch) * float64(h*w*c.Filters+1) * float64(c.Dense)
	return f
}

// Step runs one split step on the next batch: passive forward, active
// forward, BCE, active backward, passive backward with the cut gradient,
// and both sides' Adam updates. It returns the batch's loss.
func (sb *CNNStepBench) Step() (float64, error) {
	in, y := sb.batches[sb.next], sb.labels[sb.next]
	sb.next = (sb.next + 1) % len(sb.batches)
	loss, err := splitStep(sb.Bottom, sb.Top, in, nil, y, sb.dLogits)
	if err != nil {
		return 0, fmt.Errorf("model: CNN benchmark: %w", err)
	}
	return loss, nil
}
