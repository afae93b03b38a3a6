// Package feature holds the attacks of the active party on the passive
// party's features (docs/methods/features.md): from the cut embeddings it
// receives, and optionally its own columns, the active reconstructs the
// passive's columns. Each attack is one file that registers itself
// ([Register]) and implements [Attack]: given an auxiliary set of rows
// whose passive features the attacker knows, it fits a decoder and guesses
// the passive features of the evaluated rows. [Run] scores a guess per
// passive column against the prior (the evaluated rows' mean or majority
// class) and against the same decoder fitted on the active's own columns
// alone.
//
// The package holds no label and reads no model: the caller computes the
// embeddings (the in-process run at every evaluation).
package feature

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/splitguard/splitguard/data"
	"github.com/splitguard/splitguard/tensor"
)

// Input is what a feature attack is given. The auxiliary rows are those
// whose passive features the attacker knows (AuxTruth); the evaluated
// rows are those it reconstructs.
type Input struct {
	// AuxEmbed and EvalEmbed are the cut embeddings of the auxiliary and
	// evaluated rows (rows×d); both nil for a decoder that reads the
	// active's own columns only (the own-column baseline).
	AuxEmbed, EvalEmbed *tensor.Matrix
	// AuxOwn and EvalOwn are the active party's own columns of the same
	// rows; both nil when it has none (or does not use them).
	AuxOwn, EvalOwn *data.Features
	// AuxTruth is the passive party's features of the auxiliary rows.
	AuxTruth *data.Features
	// Seed seeds whatever the attack draws.
	Seed uint64
	// Joint is a copy of the active party's trained top model and
	// EvalScores the joint model's outputs (logits) of the evaluated rows,
	// what the active party holds at serving time (GRN); JointOwn says
	// the top reads the active's own columns (EvalOwn). Nil where the
	// evaluation has no top (a passive party auditing itself).
	Joint      Joint
	JointOwn   bool
	EvalScores []float32
}

// Guess is a reconstruction of the passive party's features of the
// evaluated rows, laid out as data.Features: Dense rows×NumDense (in the
// columns' scaled units), Cat rows×NumCat (vocabulary ids).
type Guess struct {
	Rows  int
	Dense []float32
	Cat   []int32
}

// Attack reconstructs the passive party's features.
type Attack interface {
	// Name is the registered name.
	Name() string
	// Reconstruct fits the attack on in's auxiliary rows and guesses the
	// passive features of its evaluated rows.
	Reconstruct(in *Input) (*Guess, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]func() Attack{}
)

// Register adds a feature attack under name; it panics on a duplicate or
// empty name (a programming error, found at start-up).
func Register(name string, f func() Attack) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || f == nil {
		panic("feature: Register with an empty name or nil constructor")
	}
	if _, dup := registry[name]; dup {
		panic("feature: attack " + name + " registered twice")
	}
	registry[name] = f
}

// New returns a new instance of the named feature attack.
func New(name string) (Attack, error) {
	regMu.RLock()
	f, ok := registry[name]
	regMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown feature attack %q (known: %v)", name, Names())
	}
	return f(), nil
}

// Names returns the registered feature attacks, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check returns an error naming the first name that is not a registered
// feature attack.
func Check(names []string) error {
	known := Names()
	for _, n := range names {
		if !slices.Contains(known, n) {
			return fmt.Errorf("unknown feature attack %q (known: %v)", n, known)
		}
	}
	return nil
}
