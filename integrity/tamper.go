package integrity

import (
	"fmt"
	"sort"

	"github.com/splitguard/splitguard/tensor"
)

// Tamper replaces the embeddings a passive party sends: it is given the
// honest cut embedding of every message and returns the one to send.
type Tamper interface {
	Name() string
	// Send returns the embedding to send at step in place of e, the
	// honest one (train: a training batch; else an evaluation message).
	// The result is valid until the next call; e is not changed.
	Send(step int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error)
}

// TamperSpec declares a free-riding mode.
type TamperSpec struct {
	Name string
	Help string
	// New returns the mode, with its random draws seeded by seed.
	New func(seed uint64) Tamper
}

var tampers = map[string]TamperSpec{}

// RegisterTamper adds a free-riding mode; it panics on a duplicate or
// empty name.
func RegisterTamper(s TamperSpec) {
	if s.Name == "" || s.New == nil {
		panic("integrity: a tamper needs a name and New")
	}
	if _, ok := tampers[s.Name]; ok {
		panic("integrity: tamper " + s.Name + " registered twice")
	}
	tampers[s.Name] = s
}

// TamperNames lists the registered free-riding modes, sorted.
func TamperNames() []string {
	out := make([]string, 0, len(tampers))
	for n := range tampers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TamperHelp is the help line of a registered mode ("" if none).
func TamperHelp(name string) string { return tampers[name].Help }

// NewTamper returns the mode name, honest before step from (its
// statistics still learn from the honest embeddings then).
func NewTamper(name string, from int64, seed uint64) (Tamper, error) {
	s, ok := tampers[name]
	if !ok {
		return nil, fmt.Errorf("integrity: unknown free-riding mode %q (known: %v)", name, TamperNames())
	}
	if from < 0 {
		return nil, fmt.Errorf("integrity: free-riding from step %d, want at least 0", from)
	}
	return &delayed{t: s.New(seed), from: from}, nil
}

// observer is implemented by modes that learn from honest embeddings
// sent before they start.
type observer interface {
	observe(e *tensor.Matrix, train bool)
}

// delayed sends honestly before step from.
type delayed struct {
	t    Tamper
	from int64
}

func (d *delayed) Name() string { return d.t.Name() }

func (d *delayed) Send(step int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	if step < d.from {
		if o, ok := d.t.(observer); ok {
			o.observe(e, train)
		}
		return e, nil
	}
	return d.t.Send(step, e, train)
}

// clone copies e into dst (resized).
func clone(dst, e *tensor.Matrix) *tensor.Matrix {
	if dst == nil {
		dst = &tensor.Matrix{}
	}
	dst = dst.Resize(e.Rows, e.Cols)
	copy(dst.Data, e.Data)
	return dst
}
