package nn

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"unsafe"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/internal/vec"
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
// random row pays one cache miss rather than three (docs/PERFORMANCE.md, "Before the project").
//
// Backward produces gradients only for the rows the batch touched, summed
// over the batch when an id repeats. Work is split by field into shards
// (one per field on several cores) that GOMAXPROCS goroutines claim in turn; fields
// own disjoint rows, so the split needs no locks and the results do not
// depend on it.
//
// # Batched row access
//
// The tables are far larger than the caches and a batch's ids are nearly
// all different rows, so the cost of a step is dominated by cache and TLB
// misses on the rows it touches. Lookup reads the rows in batch order,
// prefetching them a chunk ahead. The first Backward after it sorts each
// field's (id, batch row) pairs once (a stable radix sort on the id) and
// that order serves Backward and LazyAdam: every distinct row is read
// once per pass, in address order, and its repeats are merged without
// any per-row bookkeeping in the table. A lookup no backward follows (an
// evaluation) never sorts. Backward writes each distinct row's
// gradient contiguously and LazyAdam walks that compact list. Repeats of
// an id are summed in batch-row order, so the results do not depend on
// the sort either. Before each pass works on a chunk of rows it first
// prefetches them (touch: PREFETCHT0 through internal/vec, or one load
// of each where the CPU has no AVX2), so that their cache misses overlap.
//
// # L2 regularisation
//
// With L2 = λ > 0, the gradient of λ·Σ_r ‖w_r‖² over the distinct rows r
// the batch touched (2λ·w_r, once per row however often the id repeats)
// joins each touched row's gradient. LazyAdam adds it as it updates the
// row, in the same pass (the weights do not change between Backward and
// the update, so it is the same sum): reading every touched row of a
// large batch once more for it alone would miss the cache on each. Grad
// adds it to every touched row first, so that it always returns the whole
// gradient. Keras' embeddings_regularizer penalises the whole
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
	offsets []int        // len F+1; offsets[F] = total rows
	stride  int          // floats per row: Dim weights, Dim m, Dim v, an unused slot, padding
	store   []float32    // total rows × stride, 64-byte aligned
	rows    int          // B of the last Lookup
	sinks   []lookupSink // Lookup's parts' touch sums
	sorted  bool         // the shards' keys of the last Lookup are sorted by id
	shards  []embShard
	// pendingL2 is 2λ while the touched rows' gradients still lack the
	// L2 term (from Backward until LazyAdam's update, Grad or
	// ClearTouched), else 0.
	pendingL2 float32
}

// embShard is the fields [lo, hi) handled by one goroutine, the sorted
// ids of the last Lookup and the rows touched by the last Backward.
type embShard struct {
	lo, hi int
	// keys holds, for each field f in [lo, hi), a segment of B keys
	// id<<32 | batch row, sorted by id with ties in batch-row order
	// (written by Lookup).
	keys    []uint64
	scratch []uint64 // the radix sort's second buffer, len B
	count   []int32  // the radix sort's histogram
	// Written by Backward:
	touched []int32   // distinct global rows, field by field, ascending
	start   []int     // len hi−lo+1: where each field's rows begin in touched
	grad    []float32 // len(touched)×Dim
	column  []float32 // Backward's copy of one field's columns of dy, B×Dim
	sink    uint32    // what touch read, kept so that its loads stay
}

// touchChunk is how many rows touch brings into the cache ahead of the
// work on them: enough to keep many misses in flight, few enough that
// the rows are still in L1 when the work reaches them.
const touchChunk = 64

// touch brings the first cache line of each of rows toward the cache
// ahead of the work on them, so that their misses overlap: a prefetch
// instruction per row where the CPU runs internal/vec's assembly, else a
// tight loop of independent loads (the CPU overlaps dozens of their
// misses, where a loop doing real work per row fills its reorder window
// after a few), whose sum goes to sh.sink so that they stay.
func (e *Embedding) touch(sh *embShard, rows []int32) {
	if vec.Accelerated() {
		vec.PrefetchRows(e.store, e.stride, rows)
		return
	}
	var x uint32
	for _, r := range rows {
		x += math.Float32bits(e.store[int(r)*e.stride])
	}
	sh.sink += x
}

// touchKeys is touch for the rows of keys (id<<32 | batch row) of the
// field whose id 0 is global row off; without internal/vec's assembly
// its loads' sum goes to *sink, which the caller owns.
func (e *Embedding) touchKeys(sink *uint32, keys []uint64, off int) {
	if vec.Accelerated() {
		vec.PrefetchKeys(e.store, e.stride, keys, off)
		return
	}
	var x uint32
	for _, k := range keys {
		x += math.Float32bits(e.store[(off+int(k>>32))*e.stride])
	}
	*sink += x
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
		e.store[r*e.stride+3*dim] = unusedSlot
	}
	n := shardCount(runtime.GOMAXPROCS(0), len(cards))
	for s := range n {
		lo, hi := s*len(cards)/n, (s+1)*len(cards)/n
		e.shards = append(e.shards, embShard{lo: lo, hi: hi, start: make([]int, hi-lo+1)})
	}
	return e, nil
}

// shardCount is how many shards the fields are cut into: one on one
// core; otherwise one per field, which the cores claim in turn
// (internal/par), so that a core slowed by a busy neighbour (a shared or
// virtual machine) takes fewer of them instead of holding up the others,
// and the cores that finish first wait at most one field's work for the
// last (with four shards a core, 26 fields made shards of three and four
// fields, and the core left with a four-field shard at the end kept the
// other waiting: half of the time the caller spent waiting in a step at
// batch 8,192 on two cores).
func shardCount(procs, fields int) int {
	if procs <= 1 {
		return min(1, fields)
	}
	return fields
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

// unusedSlot fills the float after each row's moments. Earlier versions
// kept per-row bookkeeping there; it stays in the layout so that Store
// (and the checkpoints written from it) keeps its format, and always
// holds this value (the bits of int32 −1).
var unusedSlot = math.Float32frombits(math.MaxUint32)

// alignedFloats returns n zeroed floats starting on a 64-byte boundary.
func alignedFloats(n int) []float32 {
	buf := make([]float32, n+16)
	off := 0
	if a := uintptr(unsafe.Pointer(&buf[0])) % 64; a != 0 {
		off = int(64-a) / 4
	}
	return buf[off : off+n : off+n]
}

// ClearTouched forgets the rows of the last Backward (their gradients
// become unavailable). Load paths call it after overwriting Store; it
// also resets every row's unused slot.
func (e *Embedding) ClearTouched() {
	e.pendingL2 = 0
	for r := range e.offsets[len(e.cards)] {
		e.store[r*e.stride+3*e.Dim] = unusedSlot
	}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.touched = sh.touched[:0]
		sh.grad = sh.grad[:0]
		clear(sh.start)
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
// then Dim second moments, then an unused slot (the bits of int32 −1) and
// padding.
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
// nil when the batch did not touch it. The slice is the layer's own. The
// first Grad after a Backward adds the L2 term to every touched row's
// gradient (which LazyAdam would otherwise add as it updates them), so it
// writes to e: it must not run beside other calls on e.
func (e *Embedding) Grad(f, k int) []float32 {
	e.addPendingL2()
	sh := &e.shards[e.shardOf(f)]
	lo, hi := sh.start[f-sh.lo], sh.start[f-sh.lo+1]
	s, ok := slices.BinarySearch(sh.touched[lo:hi], int32(e.offsets[f]+k))
	if !ok {
		return nil
	}
	s += lo
	return sh.grad[s*e.Dim : (s+1)*e.Dim]
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

// parallel runs fn for every shard, the shards after the first on
// internal/par's workers when they are free.
func (e *Embedding) parallel(fn func(sh *embShard)) {
	par.Do(len(e.shards), func(i int) { fn(&e.shards[i]) })
}

// Lookup reads ids (rows×F, row-major, field f's ids in [0, cards[f]))
// and writes field f's vector of batch row i into
// dst[i][col0+f·Dim : col0+(f+1)·Dim]. dst must already have rows rows
// and at least col0+F·Dim columns; other columns are left alone. It
// remembers the batch's ids for Backward. An
// out-of-range id is an error naming its batch row and field, and leaves
// the layer as it was.
func (e *Embedding) Lookup(ids []int32, rows int, dst *tensor.Matrix, col0 int) error {
	return e.LookupThen(ids, rows, dst, col0, nil)
}

// LookupThen is Lookup with then(i0, i1) run on each range of batch rows
// [i0, i1) once their vectors are written, in the parallel part that wrote
// them (the ranges cover the batch once): per-row work on the same rows —
// summing a row's vectors, copying other columns of dst beside them —
// without a parallel region or a serial pass of its own. then may read
// and write only rows [i0, i1) of what it touches; nil runs nothing. On an
// error, then does not run.
func (e *Embedding) LookupThen(ids []int32, rows int, dst *tensor.Matrix, col0 int, then func(i0, i1 int)) error {
	F := len(e.cards)
	if len(ids) != rows*F {
		return fmt.Errorf("nn: embedding lookup given %d ids for %d rows × %d fields", len(ids), rows, F)
	}
	if dst.Rows != rows || col0 < 0 || dst.Cols < col0+F*e.Dim {
		return fmt.Errorf("nn: embedding lookup into %d×%d at column %d; need %d rows and %d columns", dst.Rows, dst.Cols, col0, rows, col0+F*e.Dim)
	}
	if k := badID(ids, e.cards); k >= 0 {
		f := k % F
		return fmt.Errorf("nn: embedding field %d, batch row %d: id %d outside [0, %d)", f, k/F, ids[k], e.cards[f])
	}
	e.rows = rows
	e.sorted = false
	for i := range e.shards {
		sh := &e.shards[i]
		n := (sh.hi - sh.lo) * rows
		if cap(sh.keys) < n {
			sh.keys = make([]uint64, n)
		}
		sh.keys = sh.keys[:n]
	}
	// The batch rows, not the fields, are cut among the cores here: a
	// row's vectors share cache lines (four fields of dimension 4 to a
	// line), which parts by field on different cores would write at the
	// same time.
	parts := lookupParts(len(e.shards), rows)
	if cap(e.sinks) < parts {
		e.sinks = make([]lookupSink, parts)
	}
	e.sinks = e.sinks[:parts]
	par.Do(parts, func(p int) {
		i0, i1 := rows*p/parts, rows*(p+1)/parts
		for s := range e.shards {
			e.lookupRows(&e.shards[s], ids, i0, i1, dst, col0, &e.sinks[p].v)
		}
		if then != nil {
			then(i0, i1)
		}
	})
	return nil
}

// badID returns the index of the first id in ids (rows of len(cards)
// ids, field f's in [0, cards[f])) outside its field's range, or −1. It
// runs on the caller before Lookup's parallel parts: a row of ids at a
// time against the fields' bounds, with no division per id (the check by
// k mod F once took about a tenth of the caller's serial time in a step).
func badID(ids []int32, cards []int) int {
	F := len(cards)
	var bound [64]int64
	if F > len(bound) {
		for k, id := range ids {
			if f := k % F; id < 0 || int(id) >= cards[f] {
				return k
			}
		}
		return -1
	}
	for f, c := range cards {
		bound[f] = int64(min(c, 1<<31))
	}
	b := bound[:F]
	for i := 0; i+F <= len(ids); i += F {
		row := ids[i : i+F]
		row = row[:len(b)]
		// An id read as a uint32, minus its bound (at most 2³¹), is
		// negative exactly when 0 ≤ id < bound (a negative id reads as
		// at least 2³¹): the AND over the row keeps the sign bit only if
		// every id of the row is in range. No branch per id.
		all := int64(-1)
		for f, id := range row {
			all &= int64(uint32(id)) - b[f]
		}
		if all >= 0 {
			for f, id := range row {
				if id < 0 || int64(id) >= b[f] {
					return i + f
				}
			}
		}
	}
	return -1
}

// lookupSink is where one part of Lookup keeps what touchKeys read, on a
// cache line of its own.
type lookupSink struct {
	v uint32
	_ [60]byte
}

// lookupRows writes the vectors of batch rows [i0, i1) of sh's fields
// into dst and their keys into sh.keys (Lookup).
func (e *Embedding) lookupRows(sh *embShard, ids []int32, i0, i1 int, dst *tensor.Matrix, col0 int, sink *uint32) {
	F, D, S, rows := len(e.cards), e.Dim, e.stride, e.rows
	for f := sh.lo; f < sh.hi; f++ {
		keys := sh.keys[(f-sh.lo)*rows : (f-sh.lo+1)*rows]
		for i := i0; i < i1; i++ {
			keys[i] = uint64(ids[i*F+f])<<32 | uint64(i)
		}
		off := e.offsets[f]
		for i := i0; i < i1; i++ {
			if (i-i0)%touchChunk == 0 {
				e.touchKeys(sink, keys[i:min(i+touchChunk, i1)], off)
			}
			r := (off + int(keys[i]>>32)) * S
			src := e.store[r : r+D]
			o := dst.Data[i*dst.Cols+col0+f*D : i*dst.Cols+col0+(f+1)*D]
			for k := range o { // a loop, not copy: D is tiny and memmove's call costs more
				o[k] = src[k]
			}
		}
	}
}

// lookupGrain is the fewest batch rows a part of Lookup gets.
const lookupGrain = 256

// lookupParts is how many row ranges Lookup cuts a batch of rows into:
// one where the fields have one shard (one core), else up to four per
// core of at least lookupGrain rows, claimed in turn.
func lookupParts(shards, rows int) int {
	if shards <= 1 {
		return 1
	}
	return max(1, min(4*runtime.GOMAXPROCS(0), rows/lookupGrain))
}

// sortKeys sorts sh's keys of the last Lookup by id, field by field (the
// first Backward after a Lookup does it, so a lookup that no backward
// follows — evaluation — never sorts).
func (e *Embedding) sortKeys(sh *embShard) {
	rows := e.rows
	if cap(sh.scratch) < rows {
		sh.scratch = make([]uint64, rows)
	}
	for f := sh.lo; f < sh.hi; f++ {
		keys := sh.keys[(f-sh.lo)*rows : (f-sh.lo+1)*rows]
		sh.count = sortByID(keys, sh.scratch[:rows], sh.count, bits.Len(uint(e.cards[f]-1)))
	}
}

// sortByID sorts keys (id<<32 | batch row, id < 2^idBits) by id, stably,
// with an LSD radix sort whose digits are at most 11 bits wide; scratch
// must be as long as keys. The keys come from a batch in row order, so
// equal ids stay in batch-row order. count is the histogram buffer,
// grown as needed and returned for reuse.
func sortByID(keys, scratch []uint64, count []int32, idBits int) []int32 {
	if idBits == 0 || len(keys) < 2 {
		return count
	}
	const maxDigit = 11
	passes := (idBits + maxDigit - 1) / maxDigit
	width := (idBits + passes - 1) / passes
	mask := uint64(1)<<width - 1
	if len(count) < 1<<width {
		count = make([]int32, 1<<maxDigit)
	}
	src, dst := keys, scratch
	for p := range passes {
		shift := 32 + p*width
		c := count[:mask+1]
		clear(c)
		for _, k := range src {
			c[(k>>shift)&mask]++
		}
		var sum int32
		for d, n := range c {
			c[d] = sum
			sum += n
		}
		for _, k := range src {
			d := (k >> shift) & mask
			dst[c[d]] = k
			c[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(keys, src)
	}
	return count
}

// Backward reads ∂L/∂output from dy[:, col0 : col0+F·Dim] (dy must have
// the rows of the last Lookup) and sets the gradient of every row that
// Lookup touched, summing repeats in batch-row order. The L2 term follows
// in LazyAdam's update, or in Grad, whichever reads the gradients first
// (see "L2 regularisation" above).
func (e *Embedding) Backward(dy *tensor.Matrix, col0 int) {
	F, D := len(e.cards), e.Dim
	if dy.Rows != e.rows || col0 < 0 || dy.Cols < col0+F*D {
		panic(fmt.Sprintf("nn: embedding backward given %d×%d gradient at column %d after a lookup of %d rows × %d columns", dy.Rows, dy.Cols, col0, e.rows, F*D))
	}
	l2 := 2 * e.L2
	rows := e.rows
	sort := !e.sorted
	e.sorted = true
	e.parallel(func(sh *embShard) {
		if sort {
			e.sortKeys(sh)
		}
		// At most one distinct row per key: room for all of them up
		// front, so the loop below never grows a slice.
		most := (sh.hi - sh.lo) * rows
		if cap(sh.touched) < most {
			sh.touched = make([]int32, 0, most)
		}
		if cap(sh.grad) < most*D {
			sh.grad = make([]float32, 0, most*D)
		}
		if cap(sh.column) < rows*D {
			sh.column = make([]float32, rows*D)
		}
		touched, grad, column := sh.touched[:most], sh.grad[:most*D], sh.column[:rows*D]
		n := 0
		for f := sh.lo; f < sh.hi; f++ {
			sh.start[f-sh.lo] = n
			// The field's columns of dy, copied in row order into one
			// contiguous block first: the sorted keys below then read
			// rows of a block that stays in this core's cache, where
			// reading dy itself in id order would miss on nearly every
			// key (dy's rows are wide, and half of them were written
			// by another core's part of the product before).
			for i := range rows {
				src, dst := dy.Data[i*dy.Cols+col0+f*D:i*dy.Cols+col0+(f+1)*D], column[i*D:(i+1)*D]
				for k := range dst { // a loop, not copy: D is tiny and memmove's call costs more
					dst[k] = src[k]
				}
			}
			keys := sh.keys[(f-sh.lo)*rows : (f-sh.lo+1)*rows]
			prev, off := uint64(math.MaxUint64), int32(e.offsets[f])
			var g []float32
			for _, key := range keys {
				if id := key >> 32; id != prev {
					touched[n] = off + int32(id)
					g = grad[n*D : (n+1)*D]
					clear(g)
					n++
					prev = id
				}
				i := int(uint32(key))
				src := column[i*D : (i+1)*D]
				for k := range g {
					g[k] += src[k]
				}
			}
		}
		sh.touched, sh.grad = touched[:n], grad[:n*D]
		sh.start[sh.hi-sh.lo] = n
	})
	e.pendingL2 = l2
}

// addPendingL2 adds the L2 term that Backward left to LazyAdam to every
// touched row's gradient, for a reader of the gradients other than
// LazyAdam's update (Grad): 2λ·w_r, the product rounded to float32 and
// then added, as AdamRowsL2 adds it.
func (e *Embedding) addPendingL2() {
	l2 := e.pendingL2
	if l2 == 0 {
		return
	}
	e.pendingL2 = 0
	D, S := e.Dim, e.stride
	e.parallel(func(sh *embShard) {
		for s, r := range sh.touched {
			if s%touchChunk == 0 {
				e.touch(sh, sh.touched[s:min(s+touchChunk, len(sh.touched))])
			}
			w := e.store[int(r)*S : int(r)*S+D]
			dst := sh.grad[s*D : (s+1)*D]
			for k := range dst {
				dst[k] += float32(l2 * w[k]) // rounded, so that no compiler fuses it
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
