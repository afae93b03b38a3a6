package nn

import (
	"fmt"
	"math"

	"github.com/splitguard/splitguard/internal/par"
	"github.com/splitguard/splitguard/internal/vec"
	"github.com/splitguard/splitguard/tensor"
)

// DefaultLR is the Adam learning rate of the authors' Criteo and Avazu
// runs (METHODS §6).
const DefaultLR = 1e-4

// Adam is the standard bias-corrected Adam optimiser (Kingma & Ba 2015)
// for dense parameters, in PyTorch's formulation:
//
//	m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²
//	w ← w − (lr/(1−β₁ᵗ)) · m / (√v/√(1−β₂ᵗ) + ε)
//
// One Adam serves one fixed list of parameters; its moments are allocated
// on the first Step.
type Adam struct {
	LR, Beta1, Beta2, Eps float32
	// T counts the steps taken (t in the formulas after the increment).
	T int64
	// M and V are the first and second moments, one per parameter, in the
	// order of the list given to Step. Exported for checkpoints.
	M, V []*tensor.Matrix
}

// NewAdam returns Adam with learning rate lr and the usual β₁ = 0.9,
// β₂ = 0.999, ε = 1e-8 (the defaults of Keras, PyTorch and TensorFlow;
// Keras' ε is 1e-7).
func NewAdam(lr float32) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// Init allocates zero moments for params if Step has not done so yet.
func (a *Adam) Init(params []*Param) {
	if a.M != nil {
		return
	}
	for _, p := range params {
		a.M = append(a.M, tensor.New(p.W.Rows, p.W.Cols))
		a.V = append(a.V, tensor.New(p.W.Rows, p.W.Cols))
	}
}

// Step applies one update to every parameter from its gradient G.
func (a *Adam) Step(params []*Param) {
	parts, part := a.Begin(params)
	for i := range parts {
		part(i)
	}
}

// Begin starts one update of every parameter, for a caller that runs it
// beside other work (LazyAdam.StepWith): it counts the step, checks the
// shapes and returns the update's parts, one per parameter, and the
// function that runs part i. Running every part once, in any order or at
// the same time on several goroutines, is Step.
func (a *Adam) Begin(params []*Param) (parts int, part func(i int)) {
	a.Init(params)
	if len(a.M) != len(params) {
		panic(fmt.Sprintf("nn: Adam holds moments for %d parameters, given %d", len(a.M), len(params)))
	}
	for i, p := range params {
		if !tensor.SameShape(p.W, a.M[i]) || !tensor.SameShape(p.W, p.G) {
			panic(fmt.Sprintf("nn: Adam parameter %d (%s) is %d×%d with gradient %d×%d, moments %d×%d", i, p.Name, p.W.Rows, p.W.Cols, p.G.Rows, p.G.Cols, a.M[i].Rows, a.M[i].Cols))
		}
	}
	a.T++
	step, vScale := a.corrections(a.T)
	b1, b2, eps := a.Beta1, a.Beta2, a.Eps
	return len(params), func(i int) {
		p := params[i]
		adamUpdate(p.W.Data, p.G.Data, a.M[i].Data, a.V[i].Data, b1, b2, eps, step, vScale)
	}
}

// corrections returns lr/(1−β₁ᵗ) and 1/√(1−β₂ᵗ), computed in float64.
func (a *Adam) corrections(t int64) (float32, float32) {
	return adamCorrections(a.LR, a.Beta1, a.Beta2, t)
}

func adamCorrections(lr, b1, b2 float32, t int64) (float32, float32) {
	bc1 := 1 - math.Pow(float64(b1), float64(t))
	bc2 := 1 - math.Pow(float64(b2), float64(t))
	return float32(float64(lr) / bc1), float32(1 / math.Sqrt(bc2))
}

// adamUpdate is one Adam step over a parameter's values (internal/vec:
// eight lanes at a time where the CPU has AVX2, the same bits as its Go
// loop).
func adamUpdate(w, g, m, v []float32, b1, b2, eps, step, vScale float32) {
	vec.Adam(w, g, m, v, b1, b2, eps, step, vScale)
}

// LazyAdam is Adam for an [Embedding] that updates only the rows the last
// Backward touched (TensorFlow Addons' LazyAdam, PyTorch's SparseAdam):
// untouched rows keep their weights and moments. The bias correction uses
// the global step count T, as both of those do. The moments live in the
// embedding's own slab beside each row's weight. One LazyAdam serves one
// Embedding; the update is split over the embedding's goroutines.
type LazyAdam struct {
	LR, Beta1, Beta2, Eps float32
	// T counts the steps taken.
	T int64
}

// NewLazyAdam returns LazyAdam with learning rate lr and β₁ = 0.9,
// β₂ = 0.999, ε = 1e-8.
func NewLazyAdam(lr float32) *LazyAdam {
	return &LazyAdam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// Step updates the rows of e touched by its last Backward.
func (a *LazyAdam) Step(e *Embedding) { a.StepWith(e, 0, nil) }

// StepWith is Step with extra(0), …, extra(extraParts−1) run beside the
// update in the same parallel region (claimed before the embedding's
// shards): other work of the optimiser step, such as a dense Adam's parts
// (Adam.Begin), which must not touch e.
func (a *LazyAdam) StepWith(e *Embedding, extraParts int, extra func(i int)) {
	a.T++
	step, vScale := adamCorrections(a.LR, a.Beta1, a.Beta2, a.T)
	D := e.Dim
	S := e.stride
	b1, b2, eps := a.Beta1, a.Beta2, a.Eps
	// The L2 term Backward left to this pass (Embedding, "L2
	// regularisation") joins each row's gradient as the row is updated.
	l2 := e.pendingL2
	e.pendingL2 = 0
	par.Do(extraParts+len(e.shards), func(i int) {
		if i < extraParts {
			extra(i)
			return
		}
		sh := &e.shards[i-extraParts]
		for c := 0; c < len(sh.touched); c += touchChunk {
			rows := sh.touched[c:min(c+touchChunk, len(sh.touched))]
			e.touch(sh, rows)
			g := sh.grad[c*D : (c+len(rows))*D]
			if l2 != 0 {
				vec.AdamRowsL2(e.store, S, rows, g, D, l2, b1, b2, eps, step, vScale)
				continue
			}
			vec.AdamRows(e.store, S, rows, g, D, b1, b2, eps, step, vScale)
		}
	})
}
