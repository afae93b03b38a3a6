// Package step holds the benchmark harnesses of `splitguard bench` and of
// the step benchmarks: complete split training steps (passive forward,
// active forward, loss, active backward, passive backward, both
// optimisers) of the Wide&Deep model and of the CNN on synthetic batches,
// with no transport in between. It is a measuring tool: production code
// does not import it.
package step

import (
	"fmt"
	"math/rand/v2"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/model"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/tensor"
)

// Spec is the shape of the Wide&Deep step that docs/PERFORMANCE.md and
// `splitguard bench` measure.
type Spec struct {
	Batch  int // rows per batch (1024)
	Vocab  int // rows of every categorical table (100000)
	Fields int // categorical columns (26, as Criteo)
	Dense  int // dense columns (13, as Criteo)
	Seed   uint64
}

// DefaultSpec is the Criteo-shaped benchmark: batch 1024, 26 tables
// of 100,000 rows, 13 dense columns.
func DefaultSpec() Spec {
	return Spec{Batch: 1024, Vocab: 100000, Fields: 26, Dense: 13, Seed: 1}
}

// streamBench seeds the benchmark's synthetic batches.
const streamBench = 0xbe7c

// benchBatches is how many distinct batches the benchmark cycles through.
const benchBatches = 8

// WDL runs complete split training steps of the default Wide&Deep
// model on synthetic batches: ids uniform over each table (the worst
// case for caches: nearly every row a batch touches is a different
// one), dense values uniform in [0, 1), labels 25% positive.
type WDL struct {
	Bottom *model.DeepBottom
	Top    *model.DeepTop

	batches []*data.Batch
	labels  [][]float32
	dLogits []float32
	next    int
}

// NewWDL builds the model (model.DefaultConfig with the spec's seed) and
// the batches.
func NewWDL(spec Spec) (*WDL, error) {
	if spec.Batch <= 0 || spec.Vocab <= 0 || spec.Fields < 0 || spec.Dense < 0 {
		return nil, fmt.Errorf("step: benchmark spec %+v: batch and vocab must be positive, fields and dense columns non-negative", spec)
	}
	s := model.Schema{Cardinality: make([]int, spec.Fields), NumDense: spec.Dense}
	for i := range s.Cardinality {
		s.Cardinality[i] = spec.Vocab
	}
	cfg := model.DefaultConfig()
	cfg.Seed = spec.Seed
	bot, top, err := model.NewWideDeep(cfg, s, s)
	if err != nil {
		return nil, err
	}
	sb := &WDL{Bottom: bot, Top: top, dLogits: make([]float32, spec.Batch)}
	r := rand.New(rand.NewPCG(spec.Seed, streamBench))
	for range benchBatches {
		b := &data.Batch{Rows: spec.Batch, Cat: make([]int32, spec.Batch*spec.Fields), Dense: tensor.New(spec.Batch, spec.Dense)}
		for i := range b.Cat {
			b.Cat[i] = int32(r.IntN(spec.Vocab))
		}
		for i := range b.Dense.Data {
			b.Dense.Data[i] = float32(r.Float64())
		}
		y := make([]float32, spec.Batch)
		for i := range y {
			if r.Float64() < 0.25 {
				y[i] = 1
			}
		}
		sb.batches = append(sb.batches, b)
		sb.labels = append(sb.labels, y)
	}
	return sb, nil
}

// Step runs one split step on the next batch: passive forward, active
// forward, BCE, active backward, passive backward with the cut gradient,
// and both sides' optimisers. It returns the batch's loss.
func (sb *WDL) Step() (float64, error) {
	in, y := sb.batches[sb.next], sb.labels[sb.next]
	sb.next = (sb.next + 1) % len(sb.batches)
	return splitStep(sb.Bottom, sb.Top, in, in, y, sb.dLogits)
}

// splitStep is one full split training step without a transport in
// between: passive forward, active forward on the cut embedding (and wide,
// which may be nil), BCE, active backward, passive backward with the cut
// gradient, and both sides' optimisers. It returns the batch's loss.
func splitStep(bottom model.Bottom, top model.Top, in, wide *data.Batch, y, dLogits []float32) (float64, error) {
	e, err := bottom.Forward(in)
	if err != nil {
		return 0, err
	}
	logits, err := top.Forward(e, wide)
	if err != nil {
		return 0, err
	}
	loss, err := nn.SigmoidBCE(logits, y, dLogits)
	if err != nil {
		return 0, err
	}
	g, err := top.Backward(dLogits)
	if err != nil {
		return 0, err
	}
	if _, err := bottom.Backward(g); err != nil {
		return 0, err
	}
	if err := top.Step(); err != nil {
		return 0, err
	}
	if err := bottom.Step(); err != nil {
		return 0, err
	}
	return loss, nil
}
