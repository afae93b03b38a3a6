// Package protect holds the active party's defences against label
// leakage (SPEC §4):
//
//   - gradient protections behind [Protector] and a registry: "none",
//     "iso", "max_norm", "max_norm_label" and "marvell";
//   - the distance-correlation loss [DCor], whose gradient joins ∂L/∂e;
//   - label differential privacy by randomized response, [LabelDP].
//
// Every protection reads a B×d float32 gradient and writes the perturbed
// gradient g̃ that the passive party receives; sums run in float64. The
// random source is passed in (math/rand/v2), so a run is deterministic for
// a seed.
//
// # State and goroutines
//
// Protectors that depend on labels keep state between batches: with one
// class in a batch ("max_norm_label" without positives, "marvell" with a
// single class) they perturb with the most recent valid noise parameters,
// so that what the passive party observes never depends on the batch's
// label composition. Each instance must therefore be used by one goroutine
// only, in batch order; use one instance per run.
//
// # Adding a protection
//
// Write one type that implements [Protector] and register its constructor
// in an init function with [Register]; nothing else changes.
package protect

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/splitguard/splitguard/tensor"
)

// Batch is what a protection sees of one training batch.
type Batch struct {
	Grad   *tensor.Matrix // clean ∂L/∂e, B×d (read only)
	Labels []float32      // labels used by the loss, 0 or 1 (noisy under label DP)
	Probs  []float32      // predicted probabilities σ(logit)
	Step   int64          // training step, for messages
}

// Stats are per-batch fields for batches.jsonl. Values are always finite.
type Stats map[string]float64

// Protector perturbs the gradient that the active party sends back.
type Protector interface {
	// Name is the registry name.
	Name() string
	// Protect writes g̃ into out (resized to Grad's shape) and returns
	// per-batch fields for batches.jsonl. The Stats map is owned by the
	// protector and valid until its next Protect call.
	Protect(b *Batch, out *tensor.Matrix, rng *rand.Rand) (Stats, error)
}

// Options configure the protections; each constructor reads the fields
// that concern it and rejects contradictory settings. A zero value means
// "not set".
type Options struct {
	// IsoT is iso's t: noise variance (t/d)·max_i‖g_i‖² per coordinate.
	IsoT float64
	// IsoRatio is the authors' spelling of iso's strength: t = IsoRatio².
	// Setting both IsoT and IsoRatio is an error.
	IsoRatio float64
	// MarvellS is Marvell's s, the power budget P = s·‖Δ‖². In target mode
	// it is the starting s₀ (default 1, the technical report's P ← ‖Δ‖²).
	MarvellS float64
	// MarvellErrorBound is a target error lower bound L ∈ [0, ½): Marvell
	// then grows P until sumKL* ≤ (2 − 4L)².
	MarvellErrorBound float64
	// MarvellSumKL is a target τ > 0 for sumKL* directly (the alternative
	// to MarvellErrorBound; setting both is an error).
	MarvellSumKL float64
}

var (
	regMu    sync.RWMutex
	registry = map[string]func(Options) (Protector, error){}
)

// Register makes a protection constructor available under name. It panics
// when the name is empty or taken, which is a programming error.
func Register(name string, f func(Options) (Protector, error)) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || f == nil {
		panic("protect: Register with an empty name or nil constructor")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("protect: %q registered twice", name))
	}
	registry[name] = f
}

// New returns a new instance of the protection registered under name.
func New(name string, o Options) (Protector, error) {
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("protect: unknown protection %q (have %v)", name, Names())
	}
	p, err := f(o)
	if err != nil {
		return nil, fmt.Errorf("protect: %s: %w", name, err)
	}
	return p, nil
}

// Names returns the registered protection names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkBatch validates the parts of b that a protection needs and resizes
// out to the gradient's shape.
func checkBatch(name string, b *Batch, out *tensor.Matrix, labels, probs bool) error {
	if b == nil || b.Grad == nil {
		return fmt.Errorf("protect: %s: step %d: no gradient", name, stepOf(b))
	}
	if out == nil {
		return fmt.Errorf("protect: %s: step %d: nil output matrix", name, b.Step)
	}
	if err := tensor.CheckFinite(fmt.Sprintf("protect: %s: step %d: clean gradient", name, b.Step), b.Grad); err != nil {
		return err
	}
	n := b.Grad.Rows
	if labels {
		if len(b.Labels) != n {
			return fmt.Errorf("protect: %s: step %d: %d labels for %d gradient rows", name, b.Step, len(b.Labels), n)
		}
		for i, y := range b.Labels {
			if y != 0 && y != 1 {
				return fmt.Errorf("protect: %s: step %d: label %v at row %d, want 0 or 1", name, b.Step, y, i)
			}
		}
	}
	if probs {
		if len(b.Probs) != n {
			return fmt.Errorf("protect: %s: step %d: %d probabilities for %d gradient rows", name, b.Step, len(b.Probs), n)
		}
		for i, p := range b.Probs {
			if !(p >= 0 && p <= 1) {
				return fmt.Errorf("protect: %s: step %d: probability %v at row %d, want it in [0, 1]", name, b.Step, p, i)
			}
		}
	}
	out.Resize(b.Grad.Rows, b.Grad.Cols)
	return nil
}

func stepOf(b *Batch) int64 {
	if b == nil {
		return -1
	}
	return b.Step
}

// rowNorm2 returns ‖row‖² in float64.
func rowNorm2(row []float32) float64 {
	var s float64
	for _, v := range row {
		s += float64(v) * float64(v)
	}
	return s
}
