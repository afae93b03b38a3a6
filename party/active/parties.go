package active

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/metrics"
	"github.com/splitguard/splitguard/nn"
	"github.com/splitguard/splitguard/protect"
	"github.com/splitguard/splitguard/tensor"
)

// Block is one passive party's columns [Lo, Hi) of the combined
// embedding and of its gradient, when several passive parties' embeddings
// are concatenated (transport/fanin): the party's gradient protection is
// applied to its block alone, and its contribution is scored by
// replacing its block.
type Block struct {
	Name   string
	Lo, Hi int
	// Protector perturbs this party's block of the gradient (required).
	Protector protect.Protector
}

// blockState is the scratch of one block's protection.
type blockState struct {
	in, out *tensor.Matrix
	pcg     *rand.PCG // rng's source, saved with the party's state
	rng     *rand.Rand
}

// initBlocks makes each block's scratch and random stream, once.
func (a *Active) initBlocks() {
	if a.blocks != nil {
		return
	}
	a.blocks = make([]blockState, len(a.cfg.Blocks))
	for k := range a.blocks {
		a.blocks[k].pcg = rand.NewPCG(a.cfg.Seed, streamProtect+1+uint64(k))
		a.blocks[k].rng = rand.New(a.blocks[k].pcg)
		a.blocks[k].in, a.blocks[k].out = &tensor.Matrix{}, &tensor.Matrix{}
	}
	a.blockStats = protect.Stats{}
}

// checkBlocks checks that the blocks tile the embedding's width dim.
func checkBlocks(blocks []Block, dim int) error {
	at := 0
	for _, b := range blocks {
		if b.Lo != at || b.Hi <= b.Lo {
			return fmt.Errorf("active: passive party %s's columns [%d, %d) do not follow the previous party's, which end at %d", b.Name, b.Lo, b.Hi, at)
		}
		if b.Protector == nil {
			return fmt.Errorf("active: passive party %s has no protection configured", b.Name)
		}
		at = b.Hi
	}
	if at != dim {
		return fmt.Errorf("active: the passive parties' columns end at %d, the embedding is %d wide", at, dim)
	}
	return nil
}

// protectBlocks applies each party's protection to its block of the
// clean gradient, each with its own random stream, writing a.protected.
// The returned figures are each party's, keyed "PARTY/FIGURE".
func (a *Active) protectBlocks(clean *tensor.Matrix) (protect.Stats, error) {
	a.initBlocks()
	a.protected = a.protected.Resize(clean.Rows, clean.Cols)
	clear(a.blockStats)
	for k, b := range a.cfg.Blocks {
		s := &a.blocks[k]
		w := b.Hi - b.Lo
		s.in = s.in.Resize(clean.Rows, w)
		for r := range clean.Rows {
			copy(s.in.Data[r*w:(r+1)*w], clean.Data[r*clean.Cols+b.Lo:r*clean.Cols+b.Hi])
		}
		stats, err := b.Protector.Protect(&protect.Batch{Grad: s.in, Labels: a.lossY, Probs: a.probs, Step: a.step}, s.out, s.rng)
		if err != nil {
			return nil, fmt.Errorf("passive party %s: %w", b.Name, err)
		}
		if s.out.Rows != clean.Rows || s.out.Cols != w {
			return nil, fmt.Errorf("passive party %s: protection %s gave a %d×%d gradient for a %d×%d block", b.Name, b.Protector.Name(), s.out.Rows, s.out.Cols, clean.Rows, w)
		}
		for r := range clean.Rows {
			copy(a.protected.Data[r*clean.Cols+b.Lo:r*clean.Cols+b.Hi], s.out.Data[r*w:(r+1)*w])
		}
		for key, v := range stats {
			a.blockStats[b.Name+"/"+key] = v
		}
	}
	return a.blockStats, nil
}

// aucWithoutParties is the validation AUC with each party's block of
// every row's embedding replaced by the block's column means over the
// validation rows (the other parties' blocks as they are), one per block.
func (a *Active) aucWithoutParties() ([]float64, error) {
	out := make([]float64, len(a.cfg.Blocks))
	for k, b := range a.cfg.Blocks {
		auc, err := a.aucWithoutCols(b.Lo, b.Hi)
		if err != nil {
			return nil, fmt.Errorf("passive party %s: %w", b.Name, err)
		}
		out[k] = auc
	}
	return out, nil
}

// aucWithoutCols is the validation AUC with columns [lo, hi) of every
// row's embedding replaced by their means over the validation rows (the
// other columns, and the active party's own features, as they are).
func (a *Active) aucWithoutCols(lo, hi int) (float64, error) {
	v, e := a.cfg.ValRows, a.valEmb
	d := e.Cols
	mean := make([]float64, d)
	for i, x := range e.Data[:v*d] {
		mean[i%d] += float64(x)
	}
	probs := make([]float32, v)
	for s := 0; s < v; s += evalSlice {
		t := min(s+evalSlice, v)
		slice := tensor.New(t-s, d)
		for i := range slice.Data {
			if c := i % d; c >= lo && c < hi {
				slice.Data[i] = float32(mean[c] / float64(v))
			} else {
				slice.Data[i] = e.Data[s*d+i]
			}
		}
		rows := a.evalRows[:0]
		for r := s; r < t; r++ {
			rows = append(rows, r)
		}
		a.evalRows = rows
		logits, err := a.top.Forward(slice, a.wideBatch(a.test.X, rows))
		if err != nil {
			return 0, fmt.Errorf("active: validation without the passive party's embedding: %w", err)
		}
		nn.Sigmoid(probs[s:t], logits)
	}
	auc, ok := metrics.AUC(toFloat64(probs), a.test.Labels[:v], nil)
	if !ok {
		return math.NaN(), nil
	}
	return auc, nil
}
