package integrity

import (
	"math/rand/v2"

	"github.com/splitguard/splitguard/tensor"
)

// streamNoise is the PCG stream of the noise mode's draws.
const streamNoise = 0xf4ee01

func init() {
	RegisterTamper(TamperSpec{Name: "noise",
		Help: "Gaussian embeddings with the honest embedding's per-column mean and std, estimated on the fly",
		New: func(seed uint64) Tamper {
			return &noise{rng: rand.New(rand.NewPCG(seed, streamNoise))}
		}})
}

// noise sends Gaussian rows whose per-column mean and standard
// deviation are those of every honest embedding it was given (Welford's
// running colMoments).
type noise struct {
	rng *rand.Rand
	m   colMoments
	out *tensor.Matrix
}

func (t *noise) Name() string { return "noise" }

func (t *noise) observe(e *tensor.Matrix, _ bool) { t.m.add(e) }

func (t *noise) Send(_ int64, e *tensor.Matrix, train bool) (*tensor.Matrix, error) {
	t.observe(e, train)
	t.out = t.out.Resize(e.Rows, e.Cols)
	for i := range t.out.Data {
		c := i % e.Cols
		t.out.Data[i] = float32(t.m.mean[c] + t.m.sd(c)*t.rng.NormFloat64())
	}
	return t.out, nil
}
