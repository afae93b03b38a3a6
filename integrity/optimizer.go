package integrity

import (
	"fmt"
	"sort"

	"github.com/splitguard/splitguard/nn"
)

// Optimizer updates a passive party's bottom parameters from their
// gradients (nn.Param.G) in place of the honest party's Adam: a passive
// party that departs from the protocol in how it learns, not in what it
// sends. model.ParamStepper has the same method.
type Optimizer interface {
	Step(params []*nn.Param)
}

// OptimizerSpec declares a passive-party optimiser.
type OptimizerSpec struct {
	Name string
	Help string
	// New returns the optimiser with learning rate lr (> 0).
	New func(lr float64) Optimizer
}

var optimizers = map[string]OptimizerSpec{}

// RegisterOptimizer adds a passive-party optimiser; it panics on a
// duplicate or empty name.
func RegisterOptimizer(s OptimizerSpec) {
	if s.Name == "" || s.New == nil {
		panic("integrity: an optimizer needs a name and New")
	}
	if _, ok := optimizers[s.Name]; ok {
		panic("integrity: optimizer " + s.Name + " registered twice")
	}
	optimizers[s.Name] = s
}

// OptimizerNames lists the registered passive-party optimisers, sorted.
func OptimizerNames() []string {
	out := make([]string, 0, len(optimizers))
	for n := range optimizers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OptimizerHelp is the help line of a registered optimiser ("" if none).
func OptimizerHelp(name string) string { return optimizers[name].Help }

// NewOptimizer returns the passive-party optimiser name with learning
// rate lr.
func NewOptimizer(name string, lr float64) (Optimizer, error) {
	s, ok := optimizers[name]
	if !ok {
		return nil, fmt.Errorf("integrity: unknown optimizer %q (known: %v)", name, OptimizerNames())
	}
	if !(lr > 0) {
		return nil, fmt.Errorf("integrity: optimizer %s with learning rate %g, want > 0", name, lr)
	}
	return s.New(lr), nil
}
