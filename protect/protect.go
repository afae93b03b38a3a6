// Package protect holds the active party's defences against label
// leakage (METHODS §4):
//
//   - gradient protections behind [Protector], each one file that
//     registers its [Spec]; [Specs] lists every registered defence (among
//     them the seed papers' none, iso, max_norm, max_norm_label and
//     marvell, and the peer frameworks' sparsify, grad_dp with its privacy
//     accountant, grad_avg and dsgd);
//   - add-ons combined with the gradient protection: loss terms such as
//     the distance-correlation loss [DCor], whose gradient joins ∂L/∂e;
//     label noise ([LabelDP], randomized response); input layers before
//     the top model ([Spec.NewInput]: mid, mixup, fedpass); label codecs
//     ([Spec.NewCodec]: cae); layers at the passive party's output
//     ([Spec.NewPassiveOutput], such as mid_passive and nopeek), which
//     package config wraps around the bottom so that the passive party
//     imports nothing of this package.
//
// docs/METHODS.md §4 and docs/methods/defences-peer.md define each defence.
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
// Write one file: a type that implements [Protector] and an init function
// that calls [Register] with its [Spec] — its name, its parameters (key,
// help, default, range), its legend label, its colour ([Spec.Color]: its
// own, legible on white) and optionally its place in the report
// ([Spec.Rank]). The command line's flags, config keys, validation,
// config.yaml, the sweep grid, results.csv, the report's legends, colours
// and order and the live page's colours are all generated from the
// registry; nothing else changes. A defence that is combined with the gradient protection (a
// loss term such as dCor, or label noise such as label DP) registers an
// [AddOn] spec instead.
package protect

import (
	"fmt"
	"math/rand/v2"

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
