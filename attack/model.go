package attack

import (
	"fmt"

	"github.com/splitguard/splitguard/tensor"
)

// ModelAttack is an attack on the trained bottom model rather than on one
// batch (Needs.Model): model completion (Fu et al., USENIX Security 2022).
// The attacker holds the bottom, its own features and the labels of a few
// training rows; it fits a head on the bottom's cut output and scores the
// rows it wants to label. The caller (package completion) chooses the rows
// and computes the cut outputs; the attack only fits and scores.
type ModelAttack interface {
	// Name is the attack's registered name, e.g. "completion".
	Name() string
	// Needs declares what the attack needs; Model is true.
	Needs() Needs
	// Complete fits on in and writes into dst, resized to in.Target.Rows,
	// the attacker's probability that each target row is positive, and
	// returns dst. It returns an error naming the attack when the input is
	// unusable (one class among the known labels, mismatched widths, a
	// non-finite value).
	Complete(in *CompletionInput, dst []float64) ([]float64, error)
}

// CompletionInput is what a model-completion attacker holds: the cut
// outputs (rows) of its known-label training rows, of unlabelled training
// rows, and of the rows it scores, all of the same width.
type CompletionInput struct {
	// Known is the cut output of the rows whose labels the attacker knows.
	Known *tensor.Matrix
	// Labels are the known rows' labels (0 or 1), both classes present.
	Labels []uint8
	// Unlabelled is the cut output of training rows without labels (nil
	// or 0 rows: none). Only a semi-supervised attack uses it beyond the
	// feature scaling and the class-prior estimate.
	Unlabelled *tensor.Matrix
	// Target is the cut output of the rows to score.
	Target *tensor.Matrix
	// Seed fixes the head's initialisation.
	Seed uint64
}

// RegisterModel makes a model attack constructible by name with
// [NewModel]; it panics like [Register].
func RegisterModel(name string, f func() ModelAttack) {
	if f == nil {
		panic("attack: RegisterModel needs a name and a constructor")
	}
	register(name, func() Plugin { return f() })
}

// NewModel returns a fresh instance of the model attack registered under
// name.
func NewModel(name string) (ModelAttack, error) {
	p, err := NewPlugin(name)
	if err != nil {
		return nil, err
	}
	a, ok := p.(ModelAttack)
	if !ok {
		return nil, fmt.Errorf("attack %q scores batches, not a trained model", name)
	}
	return a, nil
}

// ModelNames returns the registered model attacks among names, in order.
func ModelNames(names []string) []string {
	var out []string
	for _, n := range names {
		if needs, err := Describe(n); err == nil && needs.Model {
			out = append(out, n)
		}
	}
	return out
}

// check validates a completion input and returns the width.
func (in *CompletionInput) check(name string) (int, error) {
	if in == nil || in.Known == nil || in.Target == nil {
		return 0, fmt.Errorf("attack %s: needs the known rows' and the target rows' cut outputs", name)
	}
	d := in.Known.Cols
	if len(in.Labels) != in.Known.Rows {
		return 0, fmt.Errorf("attack %s: %d known rows but %d labels", name, in.Known.Rows, len(in.Labels))
	}
	pos := 0
	for i, y := range in.Labels {
		if y > 1 {
			return 0, fmt.Errorf("attack %s: known label %d is %d, want 0 or 1", name, i, y)
		}
		pos += int(y)
	}
	if pos == 0 || pos == len(in.Labels) {
		return 0, fmt.Errorf("attack %s: the %d known labels hold one class only; it needs both", name, len(in.Labels))
	}
	if in.Target.Cols != d || (in.Unlabelled != nil && in.Unlabelled.Rows > 0 && in.Unlabelled.Cols != d) {
		return 0, fmt.Errorf("attack %s: cut outputs of different widths (known %d, target %d)", name, d, in.Target.Cols)
	}
	for _, m := range []struct {
		what string
		x    *tensor.Matrix
	}{{"known rows", in.Known}, {"unlabelled rows", in.Unlabelled}, {"target rows", in.Target}} {
		if m.x != nil {
			if err := checkFinite(name, "cut", m.what, m.x); err != nil {
				return 0, err
			}
		}
	}
	return d, nil
}
