package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"

	"github.com/splitguard/splitguard/tensor"
)

// Embedding maps F categorical fields to Dim-wide vectors, one table per
// field, all stored in one shared slab: field f's id k is global row
// Offset(f)+k. A batch row's output is the F vectors side by side
// (F·Dim columns), written into a block of a wider matrix so that a model
// can place dense features next to it without a copy.
//
// Each row keeps its weight and its Adam moments together in memory
// (weight, m, v: 3·Dim floats), so that the lazy optimiser touching a
// random row pays one cache miss rather than three (ENGINE-NOTES.md).
//
// Backward produces gradients only for the rows the batch touched, summed
// over the batch when an id repeats. Work is split by field over up to
// GOMAXPROCS goroutines; fields own disjoint rows, so the split needs no
// locks and the results do not depend on it.
//
// # L2 regularisation
//
// With L2 = λ > 0, Backward adds the gradient of λ·Σ_r ‖w_r‖² over the
// distinct rows r the batch touched (2λ·w_r, once per row however often
// the id repeats). Keras' embeddings_regularizer penalises the whole
// table every step instead, which decays every row — including the ones
// no batch touched — and makes each step O(table size). Penalising the
// touched rows keeps the step sparse, and is what lazy/sparse optimisers
// (TF's LazyAdam, PyTorch's SparseAdam) can express at all.
type Embedding struct {
	// Dim is the width of one field's vector.
	Dim int
	// L2 is the regularisation strength λ (0 disables it).
	L2 float32

	cards   []int
	offsets []int     // len F+1; offsets[F] = total rows
	stride  int       // floats per row: Dim weights, Dim m, Dim v, the slot, padding
	store   []float32 // total rows × stride, 64-byte aligned
	gids    []int32   // last Lookup's global rows, B×F
	rows    int       // B of the last Lookup
	shards  []embShard
	wg      sync.WaitGroup
}

// embShard is the fields [lo, hi) handled by one goroutine and the rows
// they touched in the last Backward.
type embShard struct {
	lo, hi  int
	touched []int32   // distinct global rows, in first-touch order
	grad    []float32 // len(touched)×Dim
}

// NewEmbedding returns tables of cards[f] rows each, dim wide, with
// weights drawn uniformly from (−scale, scale) — Keras' default uses
// scale 0.05 — row by row from rng.
func NewEmbedding(cards []int, dim int, scale float32, rng *rand.Rand) (*Embedding, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("nn: embedding dimension %d must be positive", dim)
	}
	if len(cards) == 0 {
		return nil, fmt.Errorf("nn: embedding needs at least one field")
	}
	e := &Embedding{Dim: dim, cards: append([]int(nil), cards...), offsets: make([]int, len(cards)+1)}
	for f, c := range cards {
		if c <= 0 {
			return nil, fmt.Errorf("nn: embedding field %d has cardinality %d; it must be positive", f, c)
		}
		e.offsets[f+1] = e.offsets[f] + c
	}
	total := e.offsets[len(cards)]
	if total > 1<<31-1 {
		return nil, fmt.Errorf("nn: embedding tables hold %d rows, more than an int32 id can address", total)
	}
	e.stride = rowStride(dim)
	e.store = alignedFloats(total * e.stride)
	for r := range total {
		w := e.store[r*e.stride : r*e.stride+dim]
		for k := range w {
			w[k] = float32(2*rng.Float64()-1) * scale
		}
		e.setSlot(int32(r), -1)
	}
	n := min(runtime.GOMAXPROCS(0), len(cards))
	for s := range n {
		e.shards = append(e.shards, embShard{lo: s * len(cards) / n, hi: (s + 1) * len(cards) / n})
	}
	return e, nil
}

// rowStride is the floats per row for dim: 3·dim+1 rounded up to a power
// of two up to 16 floats (64 bytes), to a multiple of 16 beyond.
func rowStride(dim int) int {
	n := 3*dim + 1
	if n > 16 {
		return (n + 15) / 16 * 16
	}
	s := 1
	for s < n {
		s *= 2
	}
	return s
}

// alignedFloats returns n zeroed floats starting on a 64-byte boundary.
func alignedFloats(n int) []float32 {
	buf := make([]float32, n+16)
	off := 0
	if a := uintptr(unsafe.Pointer(&buf[0])) % 64; a != 0 {
		off = int(64-a) / 4
	}
	return buf[off : off+n : off+n]
}

// slotIndex is where a row's scratch slot lives, after its weights and moments.
func (e *Embedding) slotIndex(r int32) int { return int(r)*e.stride + 3*e.Dim }

// getSlot returns row r's index in its shard's touched list, or −1.
func (e *Embedding) getSlot(r int32) int32 {
	return int32(math.Float32bits(e.store[e.slotIndex(r)]))
}

func (e *Embedding) setSlot(r int32, s int32) {
	e.store[e.slotIndex(r)] = math.Float32frombits(uint32(s))
}

// ClearTouched forgets the rows of the last Backward (their gradients
// become unavailable). Load paths call it after overwriting Store.
func (e *Embedding) ClearTouched() {
	for r := range e.offsets[len(e.cards)] {
		e.setSlot(int32(r), -1)
	}
	for i := range e.shards {
		e.shards[i].touched = e.shards[i].touched[:0]
		e.shards[i].grad = e.shards[i].grad[:0]
	}
}

// Fields returns the number of categorical fields F.
func (e *Embedding) Fields() int { return len(e.cards) }

// Width returns F·Dim, the number of output columns.
func (e *Embedding) Width() int { return len(e.cards) * e.Dim }

// Cardinalities returns the rows of each field's table (do not modify).
func (e *Embedding) Cardinalities() []int { return e.cards }

// Offset returns the global row of field f's id 0.
func (e *Embedding) Offset(f int) int { return e.offsets[f] }

// Store returns the whole slab: global row r occupies
// [r·Stride(), (r+1)·Stride()) as Dim weights, then Dim first moments,
// then Dim second moments, then a scratch slot of Backward's and padding.
// It is the model's own storage, for checkpoints; after writing into it,
// call ClearTouched.
func (e *Embedding) Store() []float32 { return e.store }

// Stride returns the floats per row of Store.
func (e *Embedding) Stride() int { return e.stride }

// Weight returns the weight vector of field f's id k (shared storage).
func (e *Embedding) Weight(f, k int) []float32 {
	r := e.offsets[f] + k
	return e.store[r*e.stride : r*e.stride+e.Dim]
}

// Grad returns the gradient of field f's id k from the last Backward, or
// nil when the batch did not touch it. The slice is the layer's own.
func (e *Embedding) Grad(f, k int) []float32 {
	s := e.getSlot(int32(e.offsets[f] + k))
	if s < 0 {
		return nil
	}
	sh := &e.shards[e.shardOf(f)]
	return sh.grad[int(s)*e.Dim : int(s+1)*e.Dim]
}

// Touched returns how many distinct rows the last Backward touched.
func (e *Embedding) Touched() int {
	n := 0
	for i := range e.shards {
		n += len(e.shards[i].touched)
	}
	return n
}

func (e *Embedding) shardOf(f int) int {
	for i := range e.shards {
		if f < e.shards[i].hi {
			return i
		}
	}
	panic(fmt.Sprintf("nn: embedding field %d out of range", f))
}

// parallel runs fn for every shard, on its own goroutine when there are
// several.
func (e *Embedding) parallel(fn func(sh *embShard)) {
	if len(e.shards) == 1 {
		fn(&e.shards[0])
		return
	}
	e.wg.Add(len(e.shards) - 1)
	for i := 1; i < len(e.shards); i++ {
		go func(sh *embShard) {
			defer e.wg.Done()
			fn(sh)
		}(&e.shards[i])
	}
	fn(&e.shards[0])
	e.wg.Wait()
}

// Lookup reads ids (rows×F, row-major, field f's ids in [0, cards[f]))
// and writes field f's vector of batch row i into
// dst[i][col0+f·Dim : col0+(f+1)·Dim]. dst must already have rows rows
// and at least col0+F·Dim columns; other columns are left alone. It
// remembers the rows for Backward. An out-of-range id is an error naming
// its batch row and field.
func (e *Embedding) Lookup(ids []int32, rows int, dst *tensor.Matrix, col0 int) error {
	F := len(e.cards)
	if len(ids) != rows*F {
		return fmt.Errorf("nn: embedding lookup given %d ids for %d rows × %d fields", len(ids), rows, F)
	}
	if dst.Rows != rows || col0 < 0 || dst.Cols < col0+F*e.Dim {
		return fmt.Errorf("nn: embedding lookup into %d×%d at column %d; need %d rows and %d columns", dst.Rows, dst.Cols, col0, rows, col0+F*e.Dim)
	}
	if cap(e.gids) < len(ids) {
		e.gids = make([]int32, len(ids))
	}
	e.gids = e.gids[:len(ids)]
	for k, id := range ids {
		f := k % F
		if id < 0 || int(id) >= e.cards[f] {
			return fmt.Errorf("nn: embedding field %d, batch row %d: id %d outside [0, %d)", f, k/F, id, e.cards[f])
		}
		e.gids[k] = id + int32(e.offsets[f])
	}
	e.rows = rows
	D, S := e.Dim, e.stride
	e.parallel(func(sh *embShard) {
		for i := range rows {
			out := dst.Data[i*dst.Cols+col0 : i*dst.Cols+col0+F*D]
			g := e.gids[i*F : (i+1)*F]
			for f := sh.lo; f < sh.hi; f++ {
				r := int(g[f]) * S
				src := e.store[r : r+D]
				o := out[f*D : (f+1)*D]
				for k := range o { // a loop, not copy: D is tiny and memmove's call costs more
					o[k] = src[k]
				}
			}
		}
	})
	return nil
}

// Backward reads ∂L/∂output from dy[:, col0 : col0+F·Dim] (dy must have
// the rows of the last Lookup) and sets the gradient of every row that
// Lookup touched, summing repeats and adding the L2 term.
func (e *Embedding) Backward(dy *tensor.Matrix, col0 int) {
	F, D, S := len(e.cards), e.Dim, e.stride
	if dy.Rows != e.rows || col0 < 0 || dy.Cols < col0+F*D {
		panic(fmt.Sprintf("nn: embedding backward given %d×%d gradient at column %d after a lookup of %d rows × %d columns", dy.Rows, dy.Cols, col0, e.rows, F*D))
	}
	l2 := 2 * e.L2
	e.parallel(func(sh *embShard) {
		for _, r := range sh.touched {
			e.setSlot(r, -1)
		}
		sh.touched = sh.touched[:0]
		sh.grad = sh.grad[:0]
		for i := range e.rows {
			in := dy.Data[i*dy.Cols+col0 : i*dy.Cols+col0+F*D]
			g := e.gids[i*F : (i+1)*F]
			for f := sh.lo; f < sh.hi; f++ {
				r := g[f]
				s := int(e.getSlot(r))
				if s < 0 {
					s = len(sh.touched)
					e.setSlot(r, int32(s))
					sh.touched = append(sh.touched, r)
					sh.grad = append(sh.grad, make([]float32, D)...)
				}
				dst := sh.grad[s*D : (s+1)*D]
				src := in[f*D : (f+1)*D]
				for k := range dst {
					dst[k] += src[k]
				}
			}
		}
		if l2 != 0 {
			for s, r := range sh.touched {
				w := e.store[int(r)*S : int(r)*S+D]
				dst := sh.grad[s*D : (s+1)*D]
				for k := range dst {
					dst[k] += l2 * w[k]
				}
			}
		}
	})
}

// RegLoss returns λ·Σ_r ‖w_r‖² over the distinct rows touched by the last
// Backward, at the current weights: the term whose gradient Backward adds.
func (e *Embedding) RegLoss() float64 {
	var s float64
	D, S := e.Dim, e.stride
	for i := range e.shards {
		for _, r := range e.shards[i].touched {
			for _, v := range e.store[int(r)*S : int(r)*S+D] {
				s += float64(v) * float64(v)
			}
		}
	}
	return float64(e.L2) * s
}
