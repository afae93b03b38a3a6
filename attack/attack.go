// Package attack holds the label-leakage attacks that splitguard runs
// against what the passive party sees (METHODS §3). Each attack is one
// file that registers itself under its name: per-batch attacks on the
// gradients the passive receives or the embeddings it computes ([Attack],
// [Register]), attacks on the running per-example memory of an epoch
// ([EpochAttack], [RegisterEpoch], kept by [Memory]), and attacks on the
// trained bottom model ([ModelAttack], [RegisterModel]: model completion,
// run by package completion). [Names] lists the registered ones;
// docs/METHODS.md §3 and docs/methods/attacks-peer.md define each. Beside
// them: the tuned attacker ([Tuned]), which searches an attack's declared
// parameters ([Tunable]) on a few known labels, and the offline
// multi-class k-means attack ([MultiClassAccuracy]).
//
// Every attack can be run at any passive layer: the caller hands it that
// layer's gradient (or output, for embedding attacks) in
// [Observation.X]. Scores are "larger = more likely positive"; the caller
// turns them into a leak AUC with metrics.Scratch.AUC, passing the scored
// mask so that rows an attack leaves out (the hints) are not counted.
//
// Adding an attack is one new file: a type implementing [Attack] (or
// [EpochAttack]) that declares in [Needs] what it needs beyond the matrix
// it scores, plus one [Register] (or [RegisterEpoch]) call in an init
// function. The auditor hands every attack exactly what it declares and
// never looks at its name; the report and the progress line order attacks
// by what they declare with [Ranked], never by name.
//
// Instances keep scratch buffers between calls and must each be used from
// one goroutine; create one instance per goroutine with [New].
package attack

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/splitguard/splitguard/tensor"
)

// Kind says what an attack reads.
type Kind int

const (
	// Gradient attacks read the gradient the passive party receives at a
	// layer (or obtains there by backpropagating what it received).
	Gradient Kind = iota
	// Embedding attacks read a layer's forward output.
	Embedding
)

// String returns "gradient" or "embedding".
func (k Kind) String() string {
	switch k {
	case Gradient:
		return "gradient"
	case Embedding:
		return "embedding"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Observation is what an attack sees of one batch at one layer.
type Observation struct {
	// Layer names the layer ("cut", "first", "2", …); it only appears in
	// error messages.
	Layer string
	// X is the B×d gradient received (or backpropagated) at this layer for
	// gradient attacks, or the layer's output for embedding attacks.
	X *tensor.Matrix
	// Oracle is the clean gradient at this layer of one positive of the
	// batch (len d), needed by the cosine attack; nil otherwise.
	Oracle []float32
	// Hints are rows known to be positive, for the hint attacks; a hint
	// attack with k hints uses the first k (see [PickHints]). They should
	// be distinct.
	Hints []int
	// PositivesMinority is the attacker's prior that positives are the
	// smaller class, used by the spectral attack.
	PositivesMinority bool
	// Known are distinct rows of the batch whose labels the attacker knows
	// (KnownLabels, 0 or 1, in the same order), for attacks declaring
	// Needs.KnownRows.
	Known       []int
	KnownLabels []uint8
	// Output is the layer's forward output (B×width), for gradient attacks
	// declaring Needs.WithOutput; nil otherwise.
	Output *tensor.Matrix
}

// Attack scores the rows of one batch.
type Attack interface {
	// Name is the attack's registered name, e.g. "norm" or "hint5_inner".
	Name() string
	// Needs declares what the attack reads and what it needs beyond it.
	Needs() Needs
	// Score writes a score per row of obs.X into scores (larger = more
	// likely positive) and sets scored[i] to whether row i was scored;
	// both must have length obs.X.Rows. It returns an error naming the
	// attack and layer when the observation is unusable (missing oracle,
	// bad hint index, wrong lengths, a non-finite value).
	Score(obs *Observation, scores []float64, scored []bool) error
}

var (
	registryMu sync.RWMutex
	registry   = map[string]func() Plugin{}
)

// Plugin is what every registered attack is: a batch [Attack], an
// [EpochAttack] or a [ModelAttack].
type Plugin interface {
	Name() string
	Needs() Needs
}

// Register makes a per-batch attack constructible by name with [New]. It
// panics when name is empty or already registered, or f is nil; call it
// from an init function.
func Register(name string, f func() Attack) {
	if f == nil {
		panic("attack: Register needs a name and a constructor")
	}
	register(name, func() Plugin { return f() })
}

// RegisterEpoch makes an epoch attack constructible by name with
// [NewEpoch]; it panics like [Register].
func RegisterEpoch(name string, f func() EpochAttack) {
	if f == nil {
		panic("attack: RegisterEpoch needs a name and a constructor")
	}
	register(name, func() Plugin { return f() })
}

func register(name string, f func() Plugin) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if name == "" {
		panic("attack: Register needs a name and a constructor")
	}
	if strings.HasSuffix(name, TunedSuffix) {
		panic(fmt.Sprintf("attack: %q ends in %q, which names tuned attackers", name, TunedSuffix))
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("attack: %q registered twice", name))
	}
	registry[name] = f
	delete(ranks, name)
}

// NewPlugin returns a fresh instance of the attack registered under name,
// a per-batch [Attack] or an [EpochAttack].
func NewPlugin(name string) (Plugin, error) {
	registryMu.RLock()
	f, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown attack %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return f(), nil
}

// New returns a fresh instance of the per-batch attack registered under
// name.
func New(name string) (Attack, error) {
	p, err := NewPlugin(name)
	if err != nil {
		return nil, err
	}
	a, ok := p.(Attack)
	if !ok {
		return nil, fmt.Errorf("attack %q %s, not per batch", name, scoresWhen(p))
	}
	return a, nil
}

// NewEpoch returns a fresh instance of the epoch attack registered under
// name.
func NewEpoch(name string) (EpochAttack, error) {
	p, err := NewPlugin(name)
	if err != nil {
		return nil, err
	}
	a, ok := p.(EpochAttack)
	if !ok {
		return nil, fmt.Errorf("attack %q %s, not at the end of an epoch", name, scoresWhen(p))
	}
	return a, nil
}

// scoresWhen says when a plugin scores, for error messages.
func scoresWhen(p Plugin) string {
	switch p.(type) {
	case Attack:
		return "scores every batch"
	case EpochAttack:
		return "scores at the end of an epoch"
	case ModelAttack:
		return "scores the trained model at each evaluation"
	}
	return "scores in no known way"
}

// Describe returns what the attack registered under name needs.
func Describe(name string) (Needs, error) {
	p, err := NewPlugin(name)
	if err != nil {
		return Needs{}, err
	}
	return p.Needs(), nil
}

// Names returns the registered attack names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkObs validates the common parts of an observation and returns B.
func checkObs(name string, obs *Observation, scores []float64, scored []bool) (int, error) {
	if obs == nil || obs.X == nil {
		return 0, fmt.Errorf("attack %s: no observation matrix", name)
	}
	n := obs.X.Rows
	if len(scores) != n || len(scored) != n {
		return 0, fmt.Errorf("attack %s at layer %q: %d rows but %d scores and %d scored flags",
			name, obs.Layer, n, len(scores), len(scored))
	}
	return n, nil
}

// rowNorms writes the Euclidean norm of each row of x into dst (float64
// accumulation). A non-finite norm means a non-finite entry, reported as
// an error naming the attack, layer, row and column.
func rowNorms(dst []float64, x *tensor.Matrix, name, layer string) error {
	tensor.RowNorms(dst, x)
	for i, v := range dst {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return notFinite(name, layer, x, i)
		}
	}
	return nil
}

func notFinite(name, layer string, x *tensor.Matrix, row int) error {
	what := fmt.Sprintf("attack %s at layer %q: input", name, layer)
	if err := tensor.CheckFinite(what, x); err != nil {
		return err
	}
	return fmt.Errorf("%s: non-finite value in row %d", what, row)
}

// firstNonFinite returns the index of the first NaN or ±Inf in v, or −1.
func firstNonFinite(v []float32) int {
	for k, x := range v {
		if x-x != 0 {
			return k
		}
	}
	return -1
}

// checkFinite returns an error naming what, the attack, layer, row and
// column of the first non-finite value of x, or nil. It allocates only
// on failure.
func checkFinite(name, layer, what string, x *tensor.Matrix) error {
	if firstNonFinite(x.Data) < 0 {
		return nil
	}
	return tensor.CheckFinite(fmt.Sprintf("attack %s at layer %q: %s", name, layer, what), x)
}

// checkFiniteSlice is checkFinite for a vector.
func checkFiniteSlice(name, layer, what string, v []float32) error {
	if k := firstNonFinite(v); k >= 0 {
		return fmt.Errorf("attack %s at layer %q: %s: non-finite value %v at index %d", name, layer, what, v[k], k)
	}
	return nil
}

// dot returns ⟨a, b⟩ accumulated in float64; len(b) ≥ len(a).
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sqDist returns ‖a − b‖² accumulated in float64; len(b) ≥ len(a).
func sqDist(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(a); i += 2 {
		d0 := float64(a[i]) - float64(b[i])
		d1 := float64(a[i+1]) - float64(b[i+1])
		s0 += d0 * d0
		s1 += d1 * d1
	}
	for ; i < len(a); i++ {
		d := float64(a[i]) - float64(b[i])
		s0 += d * d
	}
	return s0 + s1
}

// fill sets every element of s to v.
func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}
