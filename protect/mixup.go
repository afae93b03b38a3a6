package protect

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/splitguard/splitguard/configkey"
	"github.com/splitguard/splitguard/internal/buf"
	"github.com/splitguard/splitguard/tensor"
)

const (
	mixupStream   = 0x6d69787570 // "mixup"
	mixupStateTag = "mixup/v1"
)

func init() {
	Register(Spec{Name: "mixup", Color: 0xe377c2, Role: AddOn, Help: "mixup at the label party: each training batch's embeddings and labels mixed in pairs with weight λ ~ Beta(α, α)",
		Params: []Param{
			{Key: "mixup_alpha", Symbol: "α", Help: "mixup: parameter α of the Beta(α, α) mixing weight (small α: little mixing)", Min: 0, MinOpen: true, Max: math.Inf(1)},
		},
		NewInput: func(p Params, o InputOptions) (InputLayer, error) { return NewMixup(p.Get("mixup_alpha"), o.Seed) }})
}

// TargetMixer is implemented by input layers that change the training
// targets with the inputs (mixup): MixTargets returns the targets of the
// rows of the last training Forward, given the rows' own targets y.
type TargetMixer interface {
	MixTargets(y []float32) []float32
}

// Mixup is mixup (Zhang et al. 2018) where it applies to split learning:
// at the label party, on the cut embedding. For every training batch it
// draws λ ~ Beta(α, α) and a random permutation π of the rows, and the
// top model is trained on
//
//	ẽ_i = λ·e_i + (1 − λ)·e_π(i),   ỹ_i = λ·y_i + (1 − λ)·y_π(i).
//
// The passive party receives ∂L/∂e_i = λ·∂L/∂ẽ_i + (1 − λ)·∂L/∂ẽ_π⁻¹(i):
// each row is the blend of two examples' gradients, with soft targets.
// Evaluation and inference use e unchanged. The passive party's input is
// not mixed: it holds no labels, and mixing its raw features would need
// the active party's λ and π, which would tell it which examples are
// paired. Protections and loss terms that read labels see the 0/1 labels
// of the unmixed rows.
type Mixup struct {
	Alpha float64
	pcg   *rand.PCG
	rng   *rand.Rand

	lambda  float64
	perm    []int
	trained bool
	out, de tensor.Matrix
	targets []float32
}

// NewMixup returns mixup with Beta parameter α > 0, its draws keyed by
// seed.
func NewMixup(alpha float64, seed uint64) (*Mixup, error) {
	if !(alpha > 0) || math.IsInf(alpha, 0) {
		return nil, configkey.Keyed(fmt.Errorf("mixup: α = %v, want a finite value > 0 (key mixup_alpha)", alpha), "mixup_alpha")
	}
	pcg := rand.NewPCG(seed, mixupStream)
	return &Mixup{Alpha: alpha, pcg: pcg, rng: rand.New(pcg)}, nil
}

// Name returns "mixup".
func (*Mixup) Name() string { return "mixup" }

// Forward implements InputLayer.
func (m *Mixup) Forward(e *tensor.Matrix, training bool) (*tensor.Matrix, error) {
	if e == nil {
		return nil, errors.New("mixup: no embedding")
	}
	m.trained = training
	if !training {
		return e, nil
	}
	n := e.Rows
	m.lambda = betaSym(m.rng, m.Alpha)
	m.perm = m.perm[:0]
	for i := range n {
		m.perm = append(m.perm, i)
	}
	m.rng.Shuffle(n, func(i, j int) { m.perm[i], m.perm[j] = m.perm[j], m.perm[i] })
	m.out.Resize(n, e.Cols)
	l := float32(m.lambda)
	for i := range n {
		dst, a, b := m.out.Row(i), e.Row(i), e.Row(m.perm[i])
		for c := range dst {
			dst[c] = l*a[c] + (1-l)*b[c]
		}
	}
	return &m.out, nil
}

// MixTargets implements TargetMixer.
func (m *Mixup) MixTargets(y []float32) []float32 {
	if !m.trained || len(y) != len(m.perm) {
		return y
	}
	m.targets = buf.Grow(m.targets, len(y))
	l := float32(m.lambda)
	for i := range y {
		m.targets[i] = l*y[i] + (1-l)*y[m.perm[i]]
	}
	return m.targets
}

// Backward implements InputLayer: ∂L/∂e_i = λ·g_i + (1 − λ)·g_π⁻¹(i).
func (m *Mixup) Backward(g *tensor.Matrix) (*tensor.Matrix, error) {
	if !m.trained {
		return nil, errors.New("mixup: Backward without a training Forward")
	}
	if g == nil || g.Rows != len(m.perm) || g.Cols != m.out.Cols {
		return nil, fmt.Errorf("mixup: gradient of %d×%d for an output of %d×%d", rowsOf(g), colsOf(g), len(m.perm), m.out.Cols)
	}
	m.de.Resize(g.Rows, g.Cols)
	l := float32(m.lambda)
	for i := range g.Rows {
		dst, src := m.de.Row(i), g.Row(i)
		for c, v := range src {
			dst[c] = l * v
		}
	}
	for i := range g.Rows { // row i of the output drew (1 − λ) of row π(i)
		dst, src := m.de.Row(m.perm[i]), g.Row(i)
		for c, v := range src {
			dst[c] += (1 - l) * v
		}
	}
	return &m.de, nil
}

// RegLoss implements InputLayer: mixup adds no term.
func (*Mixup) RegLoss() float64 { return 0 }

// Step implements InputLayer: mixup has no parameters.
func (*Mixup) Step() error { return nil }

// Save implements InputLayer: the random stream of λ and π.
func (m *Mixup) Save(w io.Writer) error { return saveStream(w, mixupStateTag, m.pcg) }

// Load implements InputLayer.
func (m *Mixup) Load(r io.Reader) error {
	if err := loadStream(r, mixupStateTag, "mixup", m.pcg); err != nil {
		return err
	}
	m.trained = false
	return nil
}

// betaSym draws from Beta(α, α) as X/(X + Y) with X, Y ~ Gamma(α, 1).
func betaSym(rng *rand.Rand, alpha float64) float64 {
	x, y := gammaDraw(rng, alpha), gammaDraw(rng, alpha)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaDraw draws from Gamma(a, 1) by Marsaglia and Tsang's method; for
// a < 1 it draws Gamma(a + 1) and scales by U^(1/a).
func gammaDraw(rng *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaDraw(rng, a+1) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
